"""The Data section's "Reference sample from documents" block: the upload of the documents'
candidate items (what the block shows is ``section_contexts.reference_sample_context``). The
draw, which queues verification requests, is the annotation app's page
(``annotation.views.draw_reference_sample_page``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_POST

from ..forms import CandidatesUploadForm
from .organize import receive_from_page, upload_to_task


@login_required
@require_POST
def upload_candidates_page(request, slug: str):
    def load(task, form):
        return receive_from_page(
            request,
            task,
            "candidates",
            form.cleaned_data["file"],
            options={"confirm": form.cleaned_data["confirm"]},
        )

    return upload_to_task(
        request,
        slug,
        load,
        what="candidates",
        form_class=CandidatesUploadForm,
        keep="candidates_form",
    )
