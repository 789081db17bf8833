"""The one error type of the queue's services: a code for the API and a message for people."""

from __future__ import annotations

from site_platform.errors import ServiceError


class JudgmentError(ServiceError):
    """A request of an annotator that cannot be granted; ``message`` says why (shown to them).

    ``code`` is one of the API's error codes (``invalid``, ``not_annotator``, ``task_closed``,
    ``unknown_assignment``, ``client_id_reused``, ``undo_expired``, ``not_last_answer``,
    ``already_answered``, ``not_found``).
    """

    statuses = {
        "not_annotator": 403,
        "not_organizer": 403,
        "unknown_assignment": 404,
        "not_found": 404,
        "task_closed": 409,
        "client_id_reused": 409,
        "undo_expired": 409,
        "not_last_answer": 409,
        "already_answered": 409,
    }

    def __init__(self, message: str, *, code: str = "invalid"):
        super().__init__(message, code=code)
