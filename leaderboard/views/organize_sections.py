"""A task's organize pages: one page per section (overview and checklist, settings, data, people,
task page, phases, board), each with the sections' navigation (:func:`section_page`); where each
organizer action returns (:func:`to_section`); and the one banner that shows a refused action at
the top of its section's page, with a link to what to correct and the input kept
(:func:`refused`, ``_refusal.html``).

What a section shows of a part with views of its own (the checklist, the reference sample, the
people, the task page) is built in ``section_contexts``, below this module: those views show
their section again through this module, which must not import them back. Forms as the
organizer sent them replace the section's empty ones."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from site_platform.errors import ServiceError, with_headers

from .. import presenters, selectors
from ..forms import (
    PHASE_FIELDS,
    SETTINGS_PAGE_FIELDS,
    OrganizerUploadForm,
    PoolUploadForm,
    TaskSettingsForm,
)
from ..kinds import kind_for
from ..models import ReferenceSample, Task
from ..presenters.refusals import refusal_of
from ..selectors.readiness import phases as dates_check
from . import section_contexts
from .common import render_task_page

# The display template's sample item when the task has no item yet (edited on the page).
SAMPLE_ITEM = (
    '{"left": {"name": "Ada Lovelace", "born": "1815"},\n'
    ' "right": {"name": "Augusta Ada King", "born": "1815"}}'
)


@dataclass(frozen=True)
class Section:
    key: str
    label: str
    url_name: str
    template: str
    context: Callable[[Task], dict]


def _overview(task: Task) -> dict:
    """The checklist and what needs the organizers: held runs, teams waiting for approval, a
    reference draw being verified (stuck candidates included); the budget and the board in
    short."""
    verifying = None
    has_reference_sample = kind_for(task).has_reference_sample
    if has_reference_sample:
        verifying = ReferenceSample.objects.filter(
            task=task, state=ReferenceSample.State.VERIFYING
        ).first()
    waiting = [a for a in selectors.approval_requests(task) if a.approved_at is None]
    return {
        **section_contexts.readiness_context(task),
        "held_runs": selectors.held_runs(task),  # (views/held_runs.py)
        "waiting_teams": waiting,
        "verifying_draw": verifying,
        "budget": presenters.budget_summary(task),
        "hold": presenters.hold_status(task),
        "reference": selectors.reference_size(task) if has_reference_sample else None,
    }


def _settings(task: Task) -> dict:
    payload = selectors.sample_payload(task)
    sample = SAMPLE_ITEM if payload is None else json.dumps(payload, ensure_ascii=False, indent=1)
    form = TaskSettingsForm(task=task, field_names=SETTINGS_PAGE_FIELDS)
    return {"form": form, "sample_item": sample}


def _data(task: Task) -> dict:
    """The uploads the task takes (a refused file is never kept), the latest ones with their
    state and first problems, and the reference sample built in the product
    (``reference_sample.py``)."""
    forms = {
        kind: (PoolUploadForm if kind == "pool" else OrganizerUploadForm)(auto_id=f"id_{kind}_%s")
        for kind in kind_for(task).uploads
    }
    return {
        "upload_forms": forms,
        "uploads": selectors.recent_uploads(task),
        **section_contexts.reference_sample_context(task),
    }


def _people(task: Task) -> dict:
    return {
        **section_contexts.people_context(task),
        "approval_requests": selectors.approval_requests(task),
        "queue_url": reverse("annotation:queue", args=[task.slug]),
    }


def _phases(task: Task) -> dict:
    return {
        "form": TaskSettingsForm(task=task, field_names=PHASE_FIELDS),
        "dates": dates_check(task),
        "hold": presenters.hold_status(task),
    }


def _board(task: Task) -> dict:
    return {
        "budget": presenters.budget_summary(task),
        "hold": presenters.hold_status(task),
        "queue_url": reverse("annotation:queue", args=[task.slug]),
    }


ORGANIZE = "leaderboard/organize/"
SECTIONS = {
    section.key: section
    for section in (
        Section("overview", "Overview", "task_organize", ORGANIZE + "overview.html", _overview),
        Section("settings", "Settings", "organize_settings", ORGANIZE + "settings.html", _settings),
        Section("data", "Data", "organize_data", ORGANIZE + "data.html", _data),
        Section("people", "People", "organize_people", ORGANIZE + "people.html", _people),
        Section(
            "task_page",
            "Task page",
            "organize_page_text",
            ORGANIZE + "task_page.html",
            section_contexts.task_page_context,
        ),
        Section("phases", "Phases", "organize_phases", ORGANIZE + "phases.html", _phases),
        Section("board", "Board", "organize_board", ORGANIZE + "board.html", _board),
    )
}


def section_url(task: Task, key: str, anchor: str = "") -> str:
    url = reverse(SECTIONS[key].url_name, args=[task.slug])
    return f"{url}#{anchor}" if anchor else url


def to_section(task: Task, key: str):
    """Back to a section after an action it took (its message at the top)."""
    return redirect(section_url(task, key))


def next_section(request, default: str | None) -> str | None:
    """The section a form shown on several pages came from: its ``next`` field,
    ``organize:<section>`` (``organize``: the overview, as when the organize page was one
    page); else ``default``."""
    sent = request.POST.get("next", "")
    if sent == "organize":
        return "overview"
    key = sent.removeprefix("organize:")
    return key if sent.startswith("organize:") and key in SECTIONS else default


def section_page(
    request, task: Task, key: str, *, refusal=None, status: int = 200, **kept
) -> HttpResponse:
    """The organize page of section ``key``: its context, with ``kept`` (forms as the organizer
    sent them, by their name in the context) over the section's own, and a ``refusal``'s
    banner at the top."""
    section = SECTIONS[key]
    return render_task_page(
        request,
        section.template,
        task,
        {
            **section.context(task),
            **kept,
            "section": section,
            "sections": [(each, section_url(task, each.key)) for each in SECTIONS.values()],
            "refusal": refusal,
        },
        organizer=True,
        status=status,
    )


@dataclass(frozen=True)
class RefusedAction:
    """Where an organizer action is shown again when refused: its section, what the banner says
    was refused, the id of the element to correct (``anchor``) and the link's words; ``file``:
    the action uploads a file (the form's ``auto_id`` then gives its inputs' ids)."""

    section: str
    what: str
    anchor: str
    link_text: str
    file: bool = False

    @property
    def auto_id(self) -> str:
        """The ids of the upload form's inputs (its ``anchor`` names its file input)."""
        return self.anchor.removesuffix("file") + "%s" if self.file else "id_%s"


CHOOSE_AGAIN = "Choose the file again"
REFUSED = {
    "settings": RefusedAction(
        "settings", "The settings were not saved", "settings-form", "Go to the settings"
    ),
    "phases": RefusedAction("phases", "The dates were not saved", "phases-form", "Go to the dates"),
    "page_text": RefusedAction(
        "task_page", "The task page was not saved", "task-page", "Go to the task page's text"
    ),
    "task_file": RefusedAction(
        "task_page", "Your data file was not accepted", "id_task_file_file", CHOOSE_AGAIN, True
    ),
    "reference": RefusedAction(
        "data", "Your reference sample was not accepted", "id_reference_file", CHOOSE_AGAIN, True
    ),
    "pool": RefusedAction("data", "Your pool was not accepted", "id_pool_file", CHOOSE_AGAIN, True),
    "gold": RefusedAction(
        "data", "Your gold file was not accepted", "id_gold_file", CHOOSE_AGAIN, True
    ),
    "candidates": RefusedAction(
        "data",
        "Your reference candidates file was not accepted",
        "id_candidates_file",
        CHOOSE_AGAIN,
        True,
    ),
    "draw": RefusedAction(
        "data", "The reference sample draw was not made", "id_draw_size", "Go to the draw"
    ),
    "cancel": RefusedAction(
        "data", "The draw was not cancelled", "reference-sample", "Go to the reference sample"
    ),
    "settle": RefusedAction(
        "data",
        "The stuck candidates were not settled",
        "reference-sample",
        "Go to the reference sample",
    ),
    "state": RefusedAction(
        "overview", "The task was not changed", "readiness", "See the checklist"
    ),
    "release": RefusedAction(
        "overview", "The held run was not released", "attention", "See the held runs"
    ),
    "reject": RefusedAction(
        "overview", "The held run was not rejected", "attention", "See the held runs"
    ),
    "invite": RefusedAction(
        "people", "No invitation link was made", "invitation-role", "Choose a role"
    ),
    "invite_mail": RefusedAction(
        "people", "No invitation was sent", "id_addresses", "Correct the addresses"
    ),
    "remove_organizer": RefusedAction(
        "people", "The organizer was not removed", "organizers", "See the organizers"
    ),
    "approve": RefusedAction("people", "The team was not approved", "teams", "See the teams"),
}
# An action this module does not know (a part added later): shown with the data it concerns.
OTHER = RefusedAction("data", "Your request was not accepted", "data", "Go to the data")


def refused(
    request,
    task: Task,
    action: str,
    error: ServiceError | None,
    *,
    form=None,
    what: str = "",
    anchor: str = "",
    kept: dict | None = None,
) -> HttpResponse:
    """The page of ``action``'s section with the banner of its refusal at the top: ``error``
    (its status and headers; ``None``: ``form`` refused it, 400), the fields of ``form`` in
    error linked to their inputs; ``what`` and ``anchor`` in place of the action's own words
    and target; ``kept``: the forms as sent, by their name in the section's context."""
    spec = REFUSED.get(action, OTHER)
    refusal = refusal_of(
        error,
        what=what or spec.what,
        link=f"#{anchor or spec.anchor}",
        link_text=spec.link_text,
        form=form,
        file_again=spec.file,
    )
    status = error.http_status if error is not None else 400
    response = section_page(
        request, task, spec.section, refusal=refusal, status=status, **(kept or {})
    )
    return with_headers(response, error) if error is not None else response
