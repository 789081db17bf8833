"""Test support for the reference sample built in the product: twenty documents' candidates
on a draft task (``DOCUMENTS``, their truth), annotators answering the draws through the real
queue and pipeline (``annotate``), what a draw's sample should be (``expected``) and is
(``reference``); and a draw completed as the estimation does, without annotators
(``complete_latest``: ``evaluation.kinds.open_world.reference_sample.complete_draw``, the
estimation's own write)."""

from __future__ import annotations

import io
import random

from django.db import transaction

from evaluation.kinds.open_world.reference_sample import complete_draw
from leaderboard.models import ReferenceCandidate, ReferenceItem, ReferenceSample, Task
from leaderboard.services.reference_candidates import upload_candidates

from pipeline_support import answer_what_is_served, make_task

# Twenty documents of five to seven candidates, 9% true (the organizer's draw: ten documents,
# about 60 candidates, about six true).
DOCUMENTS = {
    f"doc{d:02}": {
        f"d{d:02}-c{c}": (c == 0 and d % 2 == 0) or (d, c) == (7, 3) for c in range(5 + d % 3)
    }
    for d in range(20)
}
TRUTH = {key: true for cands in DOCUMENTS.values() for key, true in cands.items()}
TRUE_KEYS = {key for key, true in TRUTH.items() if true}


def candidates_file(documents=DOCUMENTS) -> io.BytesIO:
    lines = "".join(f"{key}\t{doc}\n" for doc, cands in documents.items() for key in cands)
    upload = io.BytesIO(lines.encode())
    upload.name = "candidates.tsv"
    return upload


def draft_with_candidates(slug: str = "t") -> Task:
    """A new task as the new-task page makes it (a draft, default settings), with the
    candidates of ``DOCUMENTS``."""
    task = make_task(state=Task.State.DRAFT, slug=slug)
    upload_candidates(task=task, user="test", upload=candidates_file())
    return task


def reference(task) -> dict[str, str]:
    """The task's reference sample: key -> group."""
    return dict(ReferenceItem.objects.filter(task=task).values_list("item__key", "group"))


def expected(*samples) -> dict[str, str]:
    """The true candidates of the draws ``samples``: key -> document."""
    return {k: d for s in samples for d in s.documents for k, t in DOCUMENTS[d].items() if t}


def annotate(task, driver, people, *, seed=5, rounds=20, truth=TRUE_KEYS) -> None:
    """The annotators (``(user, accuracy)`` pairs) answer what the queue serves them, right
    with their accuracy about ``truth`` (the true keys), and the pipeline (``driver``: a
    ``PipelineDriver``) runs, until the task's sample being verified is complete or nothing
    moves."""
    rng = random.Random(seed)
    for _ in range(rounds):
        driver.drain()
        if not ReferenceSample.objects.filter(task=task, state="verifying").exists():
            return
        if not answer_what_is_served(task, people, truth, rng):
            driver.drain()
            return


def complete_latest(task: Task, true_keys=(), settled=()) -> ReferenceSample:
    """Complete the task's latest draw with the candidates ``true_keys`` found true (those also
    in ``settled`` decided below the task's confidence)."""
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        sample = ReferenceSample.objects.select_for_update().filter(task=locked).first()
        rows = ReferenceCandidate.objects.filter(task=locked, item__key__in=true_keys)
        found = list(rows.values_list("item_id", "document", "item__key"))
        fields = complete_draw(
            task=locked,
            sample=sample,
            true_items=[(item, document) for item, document, _ in found],
            settled_items=[item for item, _, key in found if key in settled],
        )
        sample.save(update_fields=fields)
    return sample
