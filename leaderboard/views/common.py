"""Helpers every page view uses: a task's page, an invitation link's page, invitations just
mailed (downloads are the platform's, ``site_platform.downloads``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from site_platform.errors import ServiceError

from .. import presenters, selectors
from ..kinds import kind_for


def render_task_page(
    request, template: str, task, context: dict, *, organizer: bool | None = None, status=200
) -> HttpResponse:
    """A page of one task: its context always has ``task``, ``kind`` (its kind's wing,
    ``leaderboard.kinds``: the words the pages use for its runs), ``is_organizer`` (the task's
    navigation shows the organizer's links) and ``phases`` (its dates, in the header);
    ``organizer`` when the view already knows it."""
    if organizer is None:
        organizer = selectors.is_organizer(task=task, user=request.user)
    return render(
        request,
        template,
        {
            "task": task,
            "kind": kind_for(task),
            "is_organizer": organizer,
            "phases": presenters.task_phases(task),
            **context,
        },
        status=status,
    )


def mailed_invitations(request, issued, view: str) -> list[dict]:
    """The invitations just sent by mail, as the page shows them once: each address and its
    link (``view``: the page where the link is used), should a mail not arrive."""
    return [
        {
            "address": one.invitation.sent_to,
            "link": request.build_absolute_uri(reverse(view, args=[one.key])),
            "expires_at": one.invitation.expires_at,
        }
        for one in issued
    ]


def invitation_page(
    request,
    *,
    template: str,
    session_key: str,
    error: type[ServiceError],
    check: Callable[[], Any],
    accept: Callable[[], HttpResponse],
    context: Callable[[Any], dict],
) -> HttpResponse:
    """The page of an invitation link (to a team, to a role on a task). GET: ``check()`` finds
    the invitation, shown with ``context(invitation)``; a visitor not signed in has it kept in
    the session under ``session_key`` (its digest, never the key) for after signing up. POST:
    ``accept()`` uses it up and answers (a visitor not signed in is sent to sign in first).
    ``error``: the refusal of both, shown on the page with its status."""
    if request.method == "POST" and not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?next={request.path}")
    try:
        if request.method == "POST":
            return accept()
        invitation = check()
    except error as exc:
        return render(request, template, {"error": exc}, status=exc.http_status)
    if not request.user.is_authenticated:
        request.session[session_key] = invitation.digest  # never the key itself
    return render(
        request,
        template,
        {**context(invitation), "registration_closed": settings.REGISTRATION == "closed"},
    )
