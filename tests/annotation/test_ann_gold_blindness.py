"""Gold items cannot be told apart by anything the annotator API says (issue 29, N4).

The probe: the answer response's ``progress.remaining`` dropped by one after a real item and
stayed after a gold one (42 of 42), so with undo an annotator could answer gold carefully and
the rest carelessly. Here one script of claims, answers, undos, heartbeats and releases is
played through the API on two queues of the same size: one where some of the items served are
gold, one where none is. Every response field the annotator sees (tokens, clock times and the
items' text aside, which differ between any two queues) must be the same.
"""

import json
import uuid

import pytest
from django.test import Client

from annotation.models import GoldAnswer, GoldItem, Judgment
from annotation.selectors import annotator_progress
from annotation.services import (
    answer_assignment,
    claim_assignments,
    request_verification,
    undo_answer,
)
from leaderboard.models import Item
from leaderboard.services.tokens import rotate_token

from pipeline_support import add_items, annotator, make_task

pytestmark = pytest.mark.django_db
API = "/annotate/api"
ITEMS = 16
# The answers the script gives, in turn: a careless annotator's mixture, skips included.
ANSWERS = ["correct", "incorrect", "cannot_tell", "correct", "incorrect"]


def queue(slug: str, *, n_gold: int, gold_rate: float = 0.5):
    """A task of ``ITEMS`` items waiting for annotators, ``n_gold`` of them gold items (the
    rest requested), gold mixed in at ``gold_rate`` of the slots while any is left, no pause."""
    task = make_task(
        slug=slug,
        judgments_per_item=1,
        seed=7,
        gold_rate=gold_rate,
        gold_min_answers=1000,
        annotator_daily_cap=100,
    )
    items = add_items(task, ITEMS)
    request_verification(task=task, item_ids=[it.pk for it in items[n_gold:]])
    for i, item in enumerate(items[:n_gold]):
        GoldItem.objects.create(task=task, item=item, answer=i % 2 == 0)
    return task


class Probe:
    """One annotator's session through the API; ``seen`` is every response as the annotator
    sees it, with tokens numbered in the order they first appear and clock times left out."""

    def __init__(self, task, name):
        self.task = task
        self.user = annotator(task, name)
        self.client = Client(HTTP_AUTHORIZATION=f"Token {rotate_token(user=self.user).key}")
        self.tokens: dict[str, int] = {}
        self.seen: list = []
        self.held: list[str] = []

    def post(self, path, body=None):
        response = self.client.post(
            API + path, data=json.dumps(body or {}), content_type="application/json"
        )
        data = response.json() if response.content else None
        self.seen.append((path.split("/")[-1], response.status_code, self.blind(data)))
        return data

    def blind(self, value):
        """``value`` with tokens numbered, times and item text dropped."""
        if isinstance(value, dict):
            return {
                key: self.token(v) if key == "token" else self.blind(v)
                for key, v in value.items()
                if key not in ("expires_at", "undo_until", "display", "client_id")
            }
        if isinstance(value, list):
            return [self.blind(v) for v in value]
        return value

    def token(self, token):
        return self.tokens.setdefault(token, len(self.tokens)) if token else token

    def claim(self, count):
        data = self.post(f"/tasks/{self.task.slug}/claim", {"count": count, "holding": self.held})
        # Every lease of one claim is handed out for the same time, gold or not.
        assert len({a["expires_at"] for a in data["assignments"]}) <= 1
        self.held += [a["token"] for a in data["assignments"]]

    def answer(self, value):
        token = self.held.pop(0)
        client_id = str(uuid.uuid4())
        self.post("/answers", {"client_id": client_id, "token": token, "answer": value})
        return client_id

    def undo(self, client_id):
        data = self.post(f"/answers/{client_id}/undo")
        self.held.insert(0, data["assignment"]["token"])

    def progress(self):
        response = self.client.get(f"{API}/tasks/{self.task.slug}/progress")
        self.seen.append(("progress", response.status_code, response.json()))

    def play(self):
        self.progress()
        for round_ in range(4):
            self.claim(3)
            self.post("/assignments/heartbeat", {"tokens": self.held})
            for turn in range(3):
                client_id = self.answer(ANSWERS[(3 * round_ + turn) % len(ANSWERS)])
                if turn == 1:  # take it back and answer it again, carefully this time
                    self.undo(client_id)
                    self.answer("correct")
        self.claim(2)
        self.post("/assignments/release", {"tokens": self.held[1:]})
        self.held = self.held[:1]
        self.answer("incorrect")
        self.progress()


def test_every_response_is_the_same_whichever_items_were_gold():
    # The claims' gold draws depend on the annotator's id: at a rate of 0.8 over the script's 14
    # slots, fewer than 3 of the 5 gold items are served with probability below 1e-6.
    mixed = Probe(queue("mixed", n_gold=5, gold_rate=0.8), "a")
    real = Probe(queue("real", n_gold=0, gold_rate=0.8), "b")
    mixed.play()
    real.play()
    gold = GoldAnswer.objects.filter(gold__task=mixed.task)
    # The script met gold items, undid one of them or not, and real items in between.
    assert gold.filter(withdrawn_at=None).count() >= 3
    assert Judgment.objects.filter(request__task=mixed.task, withdrawn_at=None).count() >= 6
    assert not GoldAnswer.objects.filter(gold__task=real.task).exists()
    assert mixed.seen == real.seen
    remaining = [
        body["progress"]["remaining"] for path, _, body in mixed.seen if path in ("answers", "undo")
    ]
    # Sixteen items: each answer takes one, each undo gives it back.
    assert remaining[:5] == [ITEMS - 1, ITEMS - 2, ITEMS - 1, ITEMS - 2, ITEMS - 3]


def test_remaining_moves_by_one_per_answer_and_undo_gold_or_real():
    task = queue("counted", n_gold=4, gold_rate=0.8)  # gold among ten claims: all but surely
    user = annotator(task, "ann")
    before = annotator_progress(task=task, annotator=user)["remaining"]
    assert before == ITEMS
    kinds = []
    while len(kinds) < 10:
        (lease,) = claim_assignments(task=task, annotator=user).assignments
        kinds.append("gold" if lease.gold_id else "real")
        result = answer_assignment(
            annotator=user, token=lease.token, client_id=uuid.uuid4(), answer="correct"
        )
        after = annotator_progress(task=task, annotator=user)["remaining"]
        assert after == before - 1, kinds
        undone = undo_answer(annotator=user, client_id=result.record.client_id)
        assert annotator_progress(task=task, annotator=user)["remaining"] == before
        answer_assignment(
            annotator=user,
            token=undone.assignment.token,
            client_id=uuid.uuid4(),
            answer="incorrect",
        )
        before -= 1
    assert {"gold", "real"} <= set(kinds)


def test_an_item_both_gold_and_requested_counts_once_and_goes_with_its_gold_answer():
    task = queue("drawn", n_gold=2)
    task.gold_rate = 1.0  # the gold items come first
    task.save(update_fields=["gold_rate"])
    user = annotator(task, "ann")
    drawn = GoldItem.objects.filter(task=task).first()
    request_verification(task=task, item_ids=[drawn.item_id])
    assert annotator_progress(task=task, annotator=user)["remaining"] == ITEMS
    leases = claim_assignments(task=task, annotator=user, count=2).assignments
    (lease,) = [lease for lease in leases if lease.gold_id == drawn.pk]
    answer_assignment(annotator=user, token=lease.token, client_id=uuid.uuid4(), answer="correct")
    assert annotator_progress(task=task, annotator=user)["remaining"] == ITEMS - 1


def test_nothing_remains_once_no_request_is_left_gold_being_served_only_with_real_work():
    task = queue("done", n_gold=ITEMS - 1)
    user = annotator(task, "ann")
    assert annotator_progress(task=task, annotator=user)["remaining"] == ITEMS
    served = []
    while not served or served[-1].gold_id:  # answer gold items until the one request comes
        (lease,) = claim_assignments(task=task, annotator=user).assignments
        answer_assignment(
            annotator=user, token=lease.token, client_id=uuid.uuid4(), answer="correct"
        )
        served.append(lease)
        if lease.gold_id:
            assert annotator_progress(task=task, annotator=user)["remaining"] == ITEMS - len(served)
    assert annotator_progress(task=task, annotator=user)["remaining"] == 0


def test_gold_counts_only_where_it_is_served():
    task = queue("no-gold", n_gold=4)
    task.gold_rate = 0.0
    task.save(update_fields=["gold_rate"])
    assert annotator_progress(task=task, annotator=annotator(task, "ann"))["remaining"] == 12


def test_a_round_is_served_in_no_order_of_its_items_keys():
    # Served in the items' order, a round's items came with their keys in sequence and a gold
    # item mixed in was the one out of it. A round of 30 comes in a shuffled order (that a
    # shuffle is in key order by chance: 1 in 30!), the same one every time for the same round.
    task = make_task(slug="order", judgments_per_item=1, gold_rate=0.0, seed=3)
    items = add_items(task, 30)
    request_verification(task=task, item_ids=[it.pk for it in items], priority=5)
    user = annotator(task, "ann")
    served = []
    while len(served) < 30:
        (lease,) = claim_assignments(task=task, annotator=user).assignments
        served.append(lease.request.item.index)
        answer_assignment(
            annotator=user, token=lease.token, client_id=uuid.uuid4(), answer="correct"
        )
    assert sorted(served) == list(range(30)) and served != sorted(served)
    again = make_task(slug="order-again", judgments_per_item=1, gold_rate=0.0, seed=3)
    request_verification(task=again, item_ids=[it.pk for it in add_items(again, 30)], priority=5)
    assert [
        item.index for item in Item.objects.filter(task=again).order_by("verification_request__id")
    ] == served


def _longest_ascending_run(keys: list[int]) -> int:
    """Length of the longest increasing subsequence of ``keys`` (patience sorting)."""
    import bisect

    tails: list[int] = []
    for key in keys:
        at = bisect.bisect_left(tails, key)
        tails[at : at + 1] = [key]
    return len(tails)


def test_gold_mixed_into_a_round_is_not_the_item_out_of_sequence():
    # Items 0-39 in key order; every fourth one is gold, the rest one round's requests. Served in
    # the items' order, the real items' keys ascended and each gold item broke the sequence (the
    # items outside the longest ascending run were exactly the gold ones). Shuffled, the real
    # items' own keys are out of sequence: their longest ascending run is short (about
    # 2*sqrt(30) = 11 for a random order), and gold comes at the positions the claim's rng draws.
    task = make_task(
        slug="gold-order",
        judgments_per_item=1,
        gold_rate=0.25,
        gold_min_answers=1000,
        seed=3,
        annotator_daily_cap=100,
    )
    items = add_items(task, 40)
    gold = {it.index for it in items[::4]}
    for it in items[::4]:
        GoldItem.objects.create(task=task, item=it, answer=True)
    request_verification(
        task=task, item_ids=[it.pk for it in items if it.index not in gold], priority=5
    )
    user = annotator(task, "ann")
    served = []
    while True:
        claim = claim_assignments(task=task, annotator=user)
        if not claim.assignments:
            break
        (lease,) = claim.assignments
        served.append((lease.request or lease.gold).item.index)
        answer_assignment(
            annotator=user, token=lease.token, client_id=uuid.uuid4(), answer="correct"
        )
    real = [i for i in served if i not in gold]
    assert sorted(real) == sorted(set(range(40)) - gold)
    assert _longest_ascending_run(real) <= len(real) // 2, real
    assert {i for i in served if i in gold}, "gold was served alongside the round"
    # In key order, what breaks the ascending run of all served keys is just the gold.
    assert set(served) - set(_ascending_keep(served)) != gold & set(served)


def _ascending_keep(keys: list[int]) -> list[int]:
    """The keys a reader keeps reading ``keys`` left to right, dropping each one lower than the
    last kept: the items that look "in sequence" to someone who expects ascending keys."""
    kept: list[int] = []
    for key in keys:
        if not kept or key > kept[-1]:
            kept.append(key)
    return kept
