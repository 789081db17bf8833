"""Answer a task's queue as simulated annotators, from a truth file.

For demos and end-to-end runs: each simulated annotator takes its next item from the queue as a
person would (a lease, gold items mixed in at the task's rate, never an item it answered or its
team predicted) and answers the item's true label with probability ``--accuracy`` and the
opposite otherwise. With ``--until-idle`` it keeps polling while a worker plans further rounds,
and stops once no item has been served for that long.
"""

from __future__ import annotations

import random
import time
import uuid
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Judgment
from annotation.services import JudgmentError, answer_assignment, claim_assignments
from leaderboard.management.commands._helpers import task_named
from site_platform.commands import existing_file


def read_truth(path: Path) -> set[str]:
    """Every true key: the first tab-separated field of each non-blank line."""
    keys = set()
    with path.open(encoding="utf-8-sig") as f:
        for line in f:
            key = line.rstrip("\r\n").split("\t", 1)[0]
            if key.strip():
                keys.add(key)
    return keys


class Command(BaseCommand):
    help = (
        "Answer what the queue of task SLUG serves (its items and gold items) from a truth "
        "file (one true key per line; every other key is false), as simulated annotators."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the task's slug")
        parser.add_argument(
            "--truth",
            required=True,
            type=Path,
            help="file with one true key per line (TSV: first column)",
        )
        parser.add_argument(
            "--accuracy",
            type=float,
            default=1.0,
            help="probability that an answer is right (default 1.0)",
        )
        parser.add_argument("--seed", type=int, default=None, help="random seed")
        parser.add_argument(
            "--annotators", type=int, default=1, help="number of simulated annotators (default 1)"
        )
        parser.add_argument("--limit", type=int, default=None, help="stop after this many answers")
        parser.add_argument(
            "--until-idle",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="keep polling until no item was served for SECONDS",
        )
        parser.add_argument(
            "--poll",
            type=float,
            default=1.0,
            metavar="SECONDS",
            help="polling interval with --until-idle (default 1)",
        )
        parser.add_argument(
            "--prefix", default="sim-annotator", help="user name prefix of the simulated annotators"
        )

    def handle(
        self,
        *args,
        slug,
        truth,
        accuracy,
        seed,
        annotators,
        limit,
        until_idle,
        poll,
        prefix,
        **options,
    ):
        if not 0.0 <= accuracy <= 1.0:
            raise CommandError("--accuracy must be between 0 and 1")
        if annotators < 1:
            raise CommandError("--annotators must be at least 1")
        if limit is not None and limit < 0:
            raise CommandError("--limit must not be negative")
        task = task_named(slug)
        existing_file(truth, "truth file")
        true_keys = read_truth(truth)
        users = self._annotators(task, prefix, annotators)
        if task.judgments_per_item > annotators:
            self.stderr.write(
                f"note: the task wants {task.judgments_per_item} judgments per item; "
                f"{annotators} annotator(s) cannot complete its items alone"
            )

        rng = random.Random(seed)
        tally = dict.fromkeys(Judgment.Answer.values, 0)
        idle_since = time.monotonic()
        while limit is None or sum(tally.values()) < limit:
            answered = self._one_pass(task, users, true_keys, accuracy, rng, tally, limit)
            if answered:
                idle_since = time.monotonic()
                continue
            if time.monotonic() - idle_since >= until_idle:
                break
            time.sleep(max(0.05, poll))

        total = sum(tally.values())
        self.stdout.write(
            f"answered {total} item(s) of task {task.slug} as {len(users)} simulated "
            f"annotator(s): {tally['correct']} correct, {tally['incorrect']} incorrect"
        )

    def _annotators(self, task, prefix, n):
        User = get_user_model()
        users = []
        for i in range(1, n + 1):
            user, created = User.objects.get_or_create(username=f"{prefix}-{i}")
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            users.append(user)
        task.annotators.add(*users)
        return users

    def _one_pass(self, task, users, true_keys, accuracy, rng, tally, limit) -> int:
        """Each annotator answers the next item the queue serves it; returns how many answers
        were recorded."""
        answered = 0
        for user in users:
            if limit is not None and sum(tally.values()) >= limit:
                break
            claim = claim_assignments(task=task, annotator=user, count=1)
            if not claim.assignments:
                continue
            lease = claim.assignments[0]
            source = lease.request if lease.request_id else lease.gold
            assert source is not None  # a lease is on a request or on a gold item
            item = source.item
            is_true = item.key in true_keys
            says_true = is_true if rng.random() < accuracy else not is_true
            answer = Judgment.Answer.CORRECT if says_true else Judgment.Answer.INCORRECT
            try:
                outcome = answer_assignment(
                    annotator=user, token=lease.token, client_id=uuid.uuid4(), answer=answer
                )
            except JudgmentError as exc:
                raise CommandError(f"item {item.key}: {exc}") from exc
            if outcome.created:
                tally[answer] += 1
                answered += 1
        return answered
