"""The Data section's "Reference sample from documents" block: the upload of the documents'
candidate items (what the block shows is ``section_contexts.reference_sample_context``). The
draw, which queues verification requests, is the annotation app's page
(``annotation.views.draw_reference_sample_page``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_POST

from ..forms import CandidatesUploadForm
from .organize import organizer_file_page


@login_required
@require_POST
def upload_candidates_page(request, slug: str):
    return organizer_file_page(
        request,
        slug,
        "candidates",
        form_class=CandidatesUploadForm,
        fields=lambda form: {"options": {"confirm": form.cleaned_data["confirm"]}},
        keep="candidates_form",
    )
