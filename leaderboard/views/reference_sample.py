"""The Data section's "Reference sample from documents" block: the candidates uploaded, the
latest draw and its progress (:func:`reference_sample_context`), and the upload of the
documents' candidate items. The draw, which queues verification requests, is the annotation
app's page (``annotation.views.draw_reference_sample_page``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_POST

from .. import selectors
from ..forms import CandidatesUploadForm, ReferenceSampleDrawForm
from ..models import Task
from . import organize


def reference_sample_context(task: Task, draw_form: ReferenceSampleDrawForm | None = None) -> dict:
    """What the Data section shows of the reference sample built in the product (nothing for a
    closed-pool task, which has no reference sample)."""
    if task.kind == Task.Kind.CLOSED_POOL:
        return {"reference_sample": None}
    return {
        "reference_sample": selectors.reference_sample_status(task),
        "reference_minimum": (selectors.REFERENCE_MIN_ITEMS, selectors.REFERENCE_MIN_DOCUMENTS),
        "candidates_form": CandidatesUploadForm(auto_id="id_candidates_%s"),
        "draw_form": draw_form or ReferenceSampleDrawForm(auto_id="id_draw_%s"),
    }


@login_required
@require_POST
def upload_candidates_page(request, slug: str):
    def load(task, form):
        return organize.receive_from_page(
            request,
            task,
            "candidates",
            form.cleaned_data["file"],
            options={"confirm": form.cleaned_data["confirm"]},
        )

    return organize.upload_to_task(
        request,
        slug,
        load,
        what="candidates",
        form_class=CandidatesUploadForm,
        keep="candidates_form",
    )
