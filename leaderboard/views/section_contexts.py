"""What the organize pages show of the parts that have views of their own: the checklist
(``readiness.py``), the reference sample built in the product (``reference_sample.py``), the
task's people (``task_roles.py``) and the task page (``task_page.py``). ``organize_sections``
builds every section's page from these, and the views of those parts show their section again
through ``organize_sections``: the contexts live here, below both, so that the organize pages
import no circle (a contract in ``pyproject.toml`` keeps it so)."""

from __future__ import annotations

from django.conf import settings

from .. import selectors
from ..forms import CandidatesUploadForm, ReferenceSampleDrawForm, TaskFileForm, TaskPageTextForm
from ..kinds import kind_for
from ..models import Task
from ..services.task_roles import ROLES


def readiness_context(task: Task) -> dict:
    """The checklist as it stands."""
    return {"readiness": kind_for(task).readiness(task)}


def reference_sample_context(task: Task, draw_form: ReferenceSampleDrawForm | None = None) -> dict:
    """What the Data section shows of the reference sample built in the product (nothing for a
    kind of task without one: a closed pool)."""
    if not kind_for(task).has_reference_sample:
        return {"reference_sample": None}
    return {
        "reference_sample": selectors.reference_sample_status(task),
        "reference_minimum": (selectors.REFERENCE_MIN_ITEMS, selectors.REFERENCE_MIN_DOCUMENTS),
        "candidates_form": CandidatesUploadForm(auto_id="id_candidates_%s"),
        "draw_form": draw_form or ReferenceSampleDrawForm(auto_id="id_draw_%s"),
    }


def people_context(task: Task) -> dict:
    """What the People section shows of the task's people and invitations."""
    return {
        "task_annotators": selectors.task_annotators(task),
        "task_organizers": selectors.task_organizers(task),
        "task_invitations": selectors.open_task_invitations(task),
        "invitation_roles": ROLES,
        "hours": settings.TASK_INVITATION_HOURS,
    }


def task_page_context(task: Task) -> dict:
    """What the Task page section shows: the page's text form, the teams' acceptances of the
    terms, the data files and the forms to add and change them (a refusal puts the form as sent
    in place of its empty one: ``page_text_form``, ``task_file_form``, ``changed_file_form``)."""
    files = list(selectors.task_files(task))
    return {
        "page_text_form": TaskPageTextForm(task=task),
        "terms_digest": selectors.terms_digest(task),
        "terms_acceptances": list(selectors.terms_acceptances(task)),
        "task_files": [
            (
                task_file,
                TaskFileForm(
                    file_required=False,
                    auto_id=f"id_file{task_file.pk}_%s",
                    initial={
                        "kind": task_file.kind,
                        "title": task_file.title,
                        "description": task_file.description,
                    },
                ),
            )
            for task_file in files
        ],
        "task_file_form": TaskFileForm(auto_id="id_task_file_%s"),
    }
