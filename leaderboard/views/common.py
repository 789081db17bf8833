"""Helpers every page view uses: a task's page, invitations just mailed (downloads are the
platform's, ``site_platform.downloads``)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

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
