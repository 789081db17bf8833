"""Reading the mail the site sent: the links in it, and the file backend of the test settings.

Django's test set-up swaps in its in-memory backend (``mailoutbox``); a test whose server runs
beside it (a browser test) uses :func:`use_file_mail`, which puts back the file backend of
``config.settings_test`` writing to a directory of the test's own, and reads it with
:func:`mail_files`.
"""

from __future__ import annotations

import re
from pathlib import Path

LINK = re.compile(r"https?://\S+")


def links_in(text: str) -> list[str]:
    """Every http(s) link in a mail's text, in order."""
    return LINK.findall(text)


def link_to(text: str, path_part: str) -> str:
    """The one link in ``text`` whose address contains ``path_part``."""
    found = [link for link in links_in(text) if path_part in link]
    assert len(found) == 1, (path_part, text)
    return found[0]


def use_file_mail(settings, directory: Path) -> Path:
    """Send the site's mail to files under ``directory`` (the test settings' backend)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = directory
    return directory


# What Django's file backend writes after each message: a file holds every message sent
# through one connection (several invitations sent at once share one).
MESSAGE_END = "\n" + "-" * 79 + "\n"


def mail_files(directory: Path) -> list[str]:
    """The text of every mail written to ``directory``, one per message, oldest first."""
    files = sorted(Path(directory).glob("*.log"), key=lambda path: path.stat().st_mtime_ns)
    return [
        message + MESSAGE_END
        for path in files
        for message in path.read_text().split(MESSAGE_END)
        if message.strip()
    ]
