"""Tasks, teams, items, runs and their predictions, the reference sample, estimates and snapshots.

A task's items get dense indices ``0 .. n_items - 1`` in arrival order: the engine
(:mod:`evaluation.core`) works on those integers. A run's predictions are stored as two packed
arrays (item indices, scores), so a million-line run is one row of ~16 MB that loads into the engine
with two ``numpy.frombuffer`` calls.

:mod:`.tasks` (tasks, items, the reference sample), :mod:`.people` (teams, invitations, approvals,
API tokens), :mod:`.runs` (runs and their outputs), :mod:`.results` (snapshots, estimates, curves,
the annotator model's fit), :mod:`.notifications` (mail owed, and mail people turned off),
:mod:`.task_page` (terms acceptances, data files), :mod:`.uploads` (organizers' uploads of gold,
pool and reference files, loaded by a worker). Early migrations name
``leaderboard.models._new_seed`` and ``default_measures``: they stay importable from here.
"""

from .notifications import MailKind, MailOptOut, Notification
from .people import (
    ApiToken,
    Invitation,
    TaskInvitation,
    Team,
    TeamApproval,
    TeamDeparture,
    TeamInvitation,
    key_digest,
)
from .results import (
    Estimate,
    LabelModelFit,
    LeaderboardSnapshot,
    RunCurve,
)
from .runs import (
    PoolRunOutputs,
    Run,
    RunEvent,
    RunPredictions,
)
from .task_page import TaskFile, TermsAcceptance
from .tasks import (
    Item,
    ReferenceCandidate,
    ReferenceItem,
    ReferenceSample,
    Task,
    _new_seed,
    default_measures,
)
from .uploads import OrganizerUpload

__all__ = [
    "ApiToken",
    "Estimate",
    "Invitation",
    "Item",
    "LabelModelFit",
    "LeaderboardSnapshot",
    "MailKind",
    "MailOptOut",
    "Notification",
    "OrganizerUpload",
    "PoolRunOutputs",
    "ReferenceCandidate",
    "ReferenceItem",
    "ReferenceSample",
    "Run",
    "RunCurve",
    "RunEvent",
    "RunPredictions",
    "Task",
    "TaskFile",
    "TaskInvitation",
    "Team",
    "TeamApproval",
    "TeamDeparture",
    "TeamInvitation",
    "TermsAcceptance",
    "_new_seed",
    "default_measures",
    "key_digest",
]
