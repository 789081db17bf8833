"""The one error type of the queue's services: a code for the API and a message for people."""

from __future__ import annotations


class JudgmentError(ValueError):
    """A request of an annotator that cannot be granted; ``message`` says why (shown to them).

    ``code`` is one of the API's error codes (``invalid``, ``not_annotator``, ``task_closed``,
    ``unknown_assignment``, ``client_id_reused``, ``undo_expired``, ``not_last_answer``,
    ``already_answered``, ``not_found``).
    """

    def __init__(self, message: str, code: str = "invalid"):
        super().__init__(message)
        self.message = message
        self.code = code
