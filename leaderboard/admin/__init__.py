"""Admin for tasks, teams, items, runs and results.

Organizers (staff users without superuser rights) see and edit only the tasks they organize;
a task created in the admin gets its creator as an organizer. Engine bookkeeping, verified
labels, predictions and snapshots are read-only here: they are written by the pipeline, and an
edit in the admin would bypass the label and reference versions the estimator relies on.

:mod:`.base` holds the organizer-scoped admin classes the other apps' admins build on (the
generic bases are the platform's, ``site_platform.admin``);
:mod:`.tasks`, :mod:`.runs`, :mod:`.people`, :mod:`.mail` and :mod:`.task_page` register the
leaderboard's models.
"""

from . import mail, people, runs, task_page, tasks
from .base import OrganizerScopedAdmin, RecordAdmin
from .tasks import TaskAdmin

__all__ = [
    "OrganizerScopedAdmin",
    "RecordAdmin",
    "TaskAdmin",
    "mail",
    "people",
    "runs",
    "task_page",
    "tasks",
]
