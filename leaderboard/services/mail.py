"""Sending one mail the site composes: a subject and a plain-text body rendered from the
templates ``leaderboard/mail/<name>_subject.txt`` and ``<name>_message.txt``, through Django's
mail backend (``EMAIL_BACKEND``: SMTP, or the console in the demo).

Workers send these (notifications, invitations by mail), with no request to take the host from:
links start with ``SITE_URL``. The body is plain text, so the templates do not escape HTML; what
users wrote (team and run names, reasons) is quoted, and the subject is one line.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.urls import reverse

MAIL_TEMPLATES = "leaderboard/mail"
SUBJECT_MAX_CHARS = 150


def site_link(view: str, *args: Any) -> str:
    """The absolute address of the page ``view`` (a URL name) with ``args``, at ``SITE_URL``."""
    return settings.SITE_URL.rstrip("/") + reverse(view, args=args)


def one_line(text: object, limit: int = SUBJECT_MAX_CHARS) -> str:
    """``text`` on one line (a header may hold no line break), cut at ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def send_site_mail(*, to: str, template: str, context: dict[str, Any]) -> None:
    """Render the mail ``template`` with ``context`` (plus ``settings_link``, where a person
    turns notifications off) and send it to the one address ``to``; raises what the backend
    raises (the caller decides whether to retry)."""
    context = {**context, "settings_link": site_link("mail_settings")}
    subject = one_line(render_to_string(f"{MAIL_TEMPLATES}/{template}_subject.txt", context))
    body = render_to_string(f"{MAIL_TEMPLATES}/{template}_message.txt", context)
    EmailMessage(subject=subject, body=body, from_email=settings.DEFAULT_FROM_EMAIL, to=[to]).send()
