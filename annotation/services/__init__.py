"""Writes of the verification queue: requests, looks, leases, answers, undo, gold and pauses.

``from annotation.services import submit_judgment, request_verification, JudgmentError`` is
the stable entry point used by the pipeline; the modules hold one concept each.
"""

from .answers import AnswerResult, Undo, answer_assignment, undo_answer
from .cancelled import cancel_requests, cancelled_items, reopen_requests
from .conflicts import (
    register_request_conflicts,
    register_run_conflicts,
    revoke_conflicting_leases,
)
from .errors import JudgmentError
from .gold import (
    GoldFileError,
    GoldLoad,
    load_gold,
    pause_annotator,
    unpause_annotator,
    upload_gold,
)
from .judgments import JudgmentOutcome, ask_again, request_verification, submit_judgment
from .queue import Claim, claim_assignments, heartbeat, release
from .reference_sample import (
    cancel_reference_sample,
    draw_reference_sample,
    settle_reference_sample,
)
from .uploads import load_organizer_upload

__all__ = [
    "AnswerResult",
    "Claim",
    "GoldFileError",
    "GoldLoad",
    "JudgmentError",
    "JudgmentOutcome",
    "Undo",
    "answer_assignment",
    "ask_again",
    "cancel_reference_sample",
    "cancel_requests",
    "cancelled_items",
    "claim_assignments",
    "draw_reference_sample",
    "heartbeat",
    "load_gold",
    "load_organizer_upload",
    "pause_annotator",
    "register_request_conflicts",
    "register_run_conflicts",
    "release",
    "reopen_requests",
    "request_verification",
    "revoke_conflicting_leases",
    "settle_reference_sample",
    "submit_judgment",
    "undo_answer",
    "unpause_annotator",
    "upload_gold",
]
