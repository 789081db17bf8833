"""The reference sample from documents on the organize pages' Data section: candidates uploaded
from the page and loaded by a worker (problems by line under Uploads, nothing stored), a seeded
draw that queues every candidate of the drawn documents, its progress on the page (and on the
overview), a second draw refused while one is verified."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.models import VerificationRequest
from leaderboard.models import ReferenceCandidate, ReferenceSample, Task

from organizer_uploads import load_received
from pipeline_support import make_task

pytestmark = pytest.mark.django_db

PAGE = "/tasks/ner/organize/data/"
CANDIDATES = "/tasks/ner/organize/reference-candidates/"
DRAW = "/annotate/ner/reference-sample/draw/"


@pytest.fixture
def org(db):
    return get_user_model().objects.create_user("org")


@pytest.fixture
def task(org):
    task = make_task(slug="ner", title="NER")
    task.organizers.add(org)
    return task


@pytest.fixture
def page(client, org, task):
    client.force_login(org)
    return client


def load_after(response):
    """``response`` of a candidates upload, the upload loaded (as the worker would) if it was
    received."""
    load_received()
    return response


def candidates(body: bytes = b"a\tdoc1\nb\tdoc1\nc\tdoc2\nd\tdoc3\n"):
    return {"file": SimpleUploadedFile("c.tsv", body)}


def test_the_section_is_on_an_open_tasks_page_only(page, org):
    text = page.get(PAGE).content.decode()
    assert 'id="reference-sample"' in text
    assert f'action="{CANDIDATES}"' in text and f'action="{DRAW}"' in text
    assert "0 items in 0 documents" in text and "none yet" in text
    assert "empty (version 0)" in text and "below the 30 items in 10 documents" in text
    pool = make_task(slug="pool", title="Pool", kind=Task.Kind.CLOSED_POOL)
    pool.organizers.add(org)
    text = page.get("/tasks/pool/organize/data/").content.decode()
    assert 'id="reference-sample"' not in text and "reference-sample/draw" not in text


def test_upload_draw_and_progress(page, task, sent_jobs):
    response = load_after(page.post(CANDIDATES, candidates(), follow=True))
    assert response.redirect_chain[-1][0] == PAGE
    assert "Received your reference candidates file c.tsv (" in response.content.decode()
    assert "loaded: 4 candidates, 3 documents" in page.get(PAGE).content.decode()
    response = page.post(DRAW, {"size": "2", "seed": "9"}, follow=True)
    text = response.content.decode()
    sample = ReferenceSample.objects.get()
    assert sample.seed == 9 and len(sample.documents) == 2
    n = ReferenceCandidate.objects.filter(document__in=sample.documents).count()
    assert VerificationRequest.objects.filter(task=task).count() == n == sample.n_candidates
    assert (
        f"Drew 2 of 3 documents (seed 9): {n} candidate{'s' if n > 1 else ''} queued for "
        "verification; once they are all settled, their true ones are the reference sample."
    ) in text
    assert f"0 of {n} candidate" in text and "0 true so far" in text
    assert "2 drawn" not in text  # the draw is not complete: nothing drawn in the frame yet
    # Progress as the estimation records it.
    ReferenceSample.objects.filter(pk=sample.pk).update(n_resolved=1, n_true=1, n_looks=2)
    text = page.get(PAGE).content.decode()
    assert f"1 of {n} candidates resolved, 1 true so far; 2 further looks asked" in text
    ReferenceSample.objects.filter(pk=sample.pk).update(
        state="complete",
        n_resolved=n,
        reference_version=1,
        reference_items=1,
        reference_documents=1,
    )
    text = page.get(PAGE).content.decode()
    assert (
        f"complete: 1 true item of {n} candidates; reference version 1: 1 item in 1 document"
        in text
    )
    assert "2 drawn, 1 left to draw" in text


def test_bad_lines_are_listed_and_nothing_is_stored(page):
    response = load_after(page.post(CANDIDATES, candidates(b"a\tdoc1\nb\n")))
    assert response.status_code == 302
    text = page.get(PAGE).content.decode()
    assert 'data-state="rejected"' in text
    assert '<span class="line">line 2</span>' in text
    assert "document missing: expected key&lt;TAB&gt;document" in text
    assert not ReferenceCandidate.objects.exists()


def test_a_second_draw_is_refused_while_one_is_verified(page):
    load_after(page.post(CANDIDATES, candidates()))
    assert page.post(DRAW, {"size": "1"}).status_code == 302
    response = page.post(DRAW, {"size": "1"})
    assert response.status_code == 409
    text = response.content.decode()
    assert "The reference sample draw was not made" in text
    assert "is being verified" in text
    assert ReferenceSample.objects.count() == 1
    # Nor may the candidates change under it.
    assert load_after(page.post(CANDIDATES, candidates(b"z\tdoc9\n"))).status_code == 409
    assert ReferenceCandidate.objects.count() == 4


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({}, 400, '<a href="#id_draw_size">Documents to draw</a>: This field is required.'),
        (
            {"size": "0"},
            400,
            '<a href="#id_draw_size">Documents to draw</a>: Ensure this value is greater than or '
            "equal to 1.",
        ),
        ({"size": "7"}, 400, "Size 7 is more than the 3 documents uploaded"),
        (
            {"size": "1", "seed": "-1"},
            400,
            '<a href="#id_draw_seed">Seed</a>: Ensure this value is greater than or equal',
        ),
    ],
)
def test_bad_draws(page, body, status, says):
    load_after(page.post(CANDIDATES, candidates()))
    response = page.post(DRAW, body)
    assert response.status_code == status
    assert says in response.content.decode()
    assert not ReferenceSample.objects.exists() and not VerificationRequest.objects.exists()


def test_an_organizer_of_another_task_cannot_draw(client, task):
    other = get_user_model().objects.create_user("other")
    make_task(slug="other", title="Other").organizers.add(other)
    client.force_login(other)
    assert client.post(DRAW, {"size": "1"}).status_code == 403
    assert load_after(client.post(CANDIDATES, candidates())).status_code == 403
    assert not ReferenceCandidate.objects.exists()


def test_a_draw_needs_the_csrf_token(org, task):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(org)
    browser.get(PAGE)  # sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    upload = {**candidates(), "csrfmiddlewaretoken": token}
    assert load_after(browser.post(CANDIDATES, upload)).status_code == 302
    api = "/api/tasks/ner/reference-sample/draw/"
    assert browser.post(DRAW, {"size": "1"}).status_code == 403
    refused = browser.post(api, {"size": 1}, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in refused.content.decode()
    assert not ReferenceSample.objects.exists()
    assert browser.post(DRAW, {"size": "1", "csrfmiddlewaretoken": token}).status_code == 302
    assert ReferenceSample.objects.count() == 1
    ReferenceSample.objects.update(state="complete")
    drawn = browser.post(api, {"size": 1}, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert drawn.status_code == 201 and ReferenceSample.objects.count() == 2


def test_document_names_are_escaped(page):
    load_after(page.post(CANDIDATES, candidates(b"a\t<b>doc</b>\n")))
    page.post(DRAW, {"size": "1"})
    text = page.get(PAGE).content.decode()
    assert "&lt;b&gt;doc&lt;/b&gt;" in text and "<b>doc</b>" not in text


CANCEL = "/annotate/ner/reference-sample/cancel/"


def test_cancel_a_sample_being_verified_then_draw_again(page, task):
    assert f'action="{CANCEL}"' not in page.get(PAGE).content.decode()
    load_after(page.post(CANDIDATES, candidates()))
    page.post(DRAW, {"size": "2", "seed": "1"})
    sample = ReferenceSample.objects.get()
    queued = VerificationRequest.objects.filter(task=task).count()
    assert f'action="{CANCEL}"' in page.get(PAGE).content.decode()
    response = page.post(CANCEL, follow=True)
    assert response.redirect_chain[-1][0] == PAGE
    text = response.content.decode()
    assert "Cancelled the reference sample of 2 documents" in text
    assert "cancelled" in text and f'action="{CANCEL}"' not in text
    sample.refresh_from_db()
    assert sample.state == "cancelled"
    # Its requests stay in the queue (nothing deleted); the task's reference is unchanged.
    assert VerificationRequest.objects.filter(task=task).count() == queued
    assert Task.objects.get(pk=task.pk).reference_version == 0
    # Cancelling again changes nothing; a new draw and candidate uploads are allowed again.
    assert page.post(CANCEL).status_code == 302
    assert page.post(DRAW, {"size": "1"}).status_code == 302
    assert ReferenceSample.objects.filter(state="verifying").count() == 1


def test_a_complete_sample_cannot_be_cancelled(page):
    load_after(page.post(CANDIDATES, candidates()))
    page.post(DRAW, {"size": "1"})
    ReferenceSample.objects.update(state="complete", reference_version=1)
    response = page.post(CANCEL)
    assert response.status_code == 409
    text = response.content.decode()
    assert "The draw was not cancelled" in text and "is complete" in text
    assert ReferenceSample.objects.get().state == "complete"


def test_only_the_tasks_organizers_cancel(client, task, org):
    client.force_login(org)
    load_after(client.post(CANDIDATES, candidates()))
    client.post(DRAW, {"size": "1"})
    other = get_user_model().objects.create_user("other")
    make_task(slug="other", title="Other").organizers.add(other)
    participant = get_user_model().objects.create_user("participant")
    for user in (other, participant):
        client.force_login(user)
        assert client.post(CANCEL).status_code == 403
    assert ReferenceSample.objects.get().state == "verifying"


def drawn_with_csrf(org) -> tuple[Client, str]:
    """The organizer's browser, checking CSRF, and its token, after a draw of one document."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(org)
    browser.get(PAGE)
    token = browser.cookies["csrftoken"].value
    load_after(browser.post(CANDIDATES, {**candidates(), "csrfmiddlewaretoken": token}))
    browser.post(DRAW, {"size": "1", "csrfmiddlewaretoken": token})
    return browser, token


def test_a_cancel_needs_the_csrf_token(org, task):
    browser, token = drawn_with_csrf(org)
    api = "/api/tasks/ner/reference-sample/cancel/"
    assert browser.post(CANCEL).status_code == 403
    refused = browser.post(api, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in refused.content.decode()
    assert ReferenceSample.objects.get().state == "verifying"
    assert browser.post(CANCEL, {"csrfmiddlewaretoken": token}).status_code == 302
    assert ReferenceSample.objects.get().state == "cancelled"
    done = browser.post(api, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert done.status_code == 200 and done.json()["state"] == "cancelled"


def test_a_replacement_needs_its_confirmation_and_the_form_is_kept(page, task):
    from leaderboard.models import ReferenceItem

    load_after(page.post(CANDIDATES, candidates()))
    page.post(DRAW, {"size": "1", "seed": "1"})
    ReferenceSample.objects.update(state="complete", reference_version=1)
    ReferenceItem.objects.create(task=task, item=ReferenceCandidate.objects.first().item, group="d")
    Task.objects.filter(pk=task.pk).update(reference_version=1)
    response = page.post(DRAW, {"size": "3", "seed": "4", "replace": "on"})
    assert response.status_code == 409
    text = response.content.decode()
    assert "The reference sample draw was not made" in text
    assert "This draw replaces the reference sample (1 item in 1 document, version 1)" in text
    assert '<a href="#id_draw_confirm" id="refusal-link">Tick the confirmation</a>' in text
    # What the organizer filled in is still there: tick the confirmation and send again.
    assert 'name="size" value="3"' in text and 'name="seed" value="4"' in text
    assert 'id="id_draw_replace" checked' in text
    assert ReferenceSample.objects.count() == 1
    response = page.post(DRAW, {"size": "3", "replace": "on", "confirm": "on"}, follow=True)
    assert "their true ones replace the reference sample (1 item in 1 document)" in (
        response.content.decode()
    )
    assert ReferenceSample.objects.filter(state="verifying", replace=True).count() == 1


def test_new_candidates_after_complete_draws_need_a_new_frame_ticked(page, task):
    load_after(page.post(CANDIDATES, candidates()))
    page.post(DRAW, {"size": "1"})
    ReferenceSample.objects.update(state="complete")
    response = load_after(page.post(CANDIDATES, candidates(b"z\tdoc9\n")))
    assert response.status_code == 409
    assert "new candidates start a new sampling frame" in response.content.decode()
    assert 'href="#id_candidates_confirm"' in response.content.decode()
    assert ReferenceCandidate.objects.count() == 4
    response = load_after(page.post(CANDIDATES, {**candidates(b"z\tdoc9\n"), "confirm": "on"}))
    assert response.status_code == 302 and ReferenceCandidate.objects.count() == 1


def test_stuck_candidates_are_listed_with_what_to_do(page, task):
    load_after(page.post(CANDIDATES, candidates(b"a\tdoc1\n<b>k</b>\tdoc1\n")))
    page.post(DRAW, {"size": "1"})
    ReferenceSample.objects.update(stuck=["<b>k</b>", "a"])
    text = page.get(PAGE).content.decode()
    assert 'id="reference-stuck"' in text
    assert "2 candidates can get no further judgment from the task's annotators" in text
    assert "&lt;b&gt;k&lt;/b&gt;, a" in text and "<b>k</b>" not in text
    assert 'href="#upload-gold"' in text
    assert 'href="/tasks/ner/organize/people/#invitations"' in text
    # The overview says a draw waits, and why.
    overview = page.get("/tasks/ner/organize/").content.decode()
    assert "2 candidates can get no further judgment and are still in doubt" in overview
    assert 'href="/tasks/ner/organize/data/#reference-sample"' in overview
    ReferenceSample.objects.update(stuck=[])
    assert 'id="reference-stuck"' not in page.get(PAGE).content.decode()


SETTLE = "/annotate/ner/reference-sample/settle/"


def stuck_draw(page, *, stuck=("a",), awaiting=0) -> ReferenceSample:
    """A draw whose latest estimation left ``stuck`` candidates and ``awaiting`` others."""
    load_after(page.post(CANDIDATES, candidates()))
    page.post(DRAW, {"size": "3", "seed": "1"})
    sample = ReferenceSample.objects.get()
    unresolved = len(stuck) + awaiting
    ReferenceSample.objects.update(stuck=list(stuck), n_resolved=sample.n_candidates - unresolved)
    return sample


def test_stuck_candidates_are_settled_from_the_page_once_none_awaits_a_judgment(page, task, org):
    sample = stuck_draw(page, stuck=("a",), awaiting=2)
    text = page.get(PAGE).content.decode()
    assert 'id="reference-settle"' in text and f'action="{SETTLE}"' not in text
    assert "2 candidates still await a judgment" in text
    ReferenceSample.objects.update(n_resolved=sample.n_candidates - 1)
    text = page.get(PAGE).content.decode()
    assert f'action="{SETTLE}"' in text and "Decide the stuck candidates by their answers" in text
    response = page.post(SETTLE, follow=True)
    assert response.redirect_chain[-1][0] == PAGE  # the Data section, its message at the top
    text = response.content.decode()
    assert "The 1 stuck candidate will be decided by its answers as they stand" in text
    assert "Settling asked by org" in text and f'action="{SETTLE}"' not in text
    sample.refresh_from_db()
    assert sample.settle_requested_by == org and sample.state == "verifying"


@pytest.mark.parametrize(
    "stuck, awaiting, code, says",
    [
        (None, 0, "no_draw_verifying", "no reference sample has been drawn"),
        ((), 0, "nothing_stuck", "no candidate of the draw is stuck"),
        (("a",), 1, "answers_pending", "1 candidate of the draw is not resolved yet"),
    ],
)
def test_a_refused_settling_is_shown_at_the_top(page, stuck, awaiting, code, says):
    if stuck is not None:
        stuck_draw(page, stuck=stuck, awaiting=awaiting)
    response = page.post(SETTLE)
    assert response.status_code == 409
    text = response.content.decode()
    banner = text.index("The stuck candidates were not settled")
    # The banner says why, its first letter capitalised, above the block it links to.
    assert text.lower().index(says) > banner and banner < text.index('id="reference-sample"')
    assert 'href="#reference-sample"' in text  # the banner links to the block concerned
    assert not ReferenceSample.objects.exclude(settle_requested_at=None).exists()


def test_only_the_tasks_organizers_settle(client, task, org):
    client.force_login(org)
    stuck_draw(client)
    other = get_user_model().objects.create_user("other")
    make_task(slug="other", title="Other").organizers.add(other)
    participant = get_user_model().objects.create_user("participant")
    for user in (other, participant):
        client.force_login(user)
        assert client.post(SETTLE).status_code == 403
    assert ReferenceSample.objects.get().settle_requested_at is None


def test_a_settling_needs_the_csrf_token(org, task):
    browser, token = drawn_with_csrf(org)
    ReferenceSample.objects.update(stuck=["a"], n_resolved=0, n_candidates=1)
    assert browser.post(SETTLE).status_code == 403
    assert ReferenceSample.objects.get().settle_requested_at is None
    assert browser.post(SETTLE, {"csrfmiddlewaretoken": token}).status_code == 302
    assert ReferenceSample.objects.get().settle_requested_at is not None


def test_a_settled_draw_shows_what_it_decided_and_the_sample_how_many(page, task):
    from reference_samples import complete_latest

    load_after(page.post(CANDIDATES, candidates(b"a\tdoc1\n<b>k</b>\tdoc1\nc\tdoc2\n")))
    page.post(DRAW, {"size": "2", "seed": "1"})
    ReferenceSample.objects.update(
        settled=[
            {"key": "<b>k</b>", "posterior": 0.6234, "true": True},
            {"key": "c", "posterior": 0.2, "true": False},
        ]
    )
    complete_latest(task, ["a", "<b>k</b>"], settled=["<b>k</b>"])
    text = page.get(PAGE).content.decode()
    assert "2 items in 1 document, 1 of them decided below the task&#x27;s confidence" in text
    assert 'id="reference-settled"' in text
    assert "2 stuck candidates decided by their answers as they stood, 1 of them true" in text
    assert "<code>&lt;b&gt;k&lt;/b&gt;</code> (0.62, true), <code>c</code> (0.20, false)" in text
    assert "<b>k</b>" not in text
