"""The organize pages' uploads (the Data section): the reference sample (open tasks), the pool
(closed pools) and gold items, received for a worker to load; the section lists each upload's
state and a rejected file's first problems by line (nothing of it stored); what is refused at
once (the task cannot take it, the wrong format, a size cap) in the banner at the top of the
section with the refusal's status; the submit page's upload guards (throttle, size ceilings);
organizers only."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import GoldItem
from leaderboard.models import Item, OrganizerUpload, ReferenceItem, Task

from organizer_uploads import load_received
from pipeline_support import add_items, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def org(db):
    return get_user_model().objects.create_user("org")


@pytest.fixture
def open_task(org):
    task = make_task(slug="ner", title="NER")
    task.organizers.add(org)
    add_items(task, 3)  # k0 k1 k2
    return task


@pytest.fixture
def pool_task(org):
    task = make_task(slug="pool", title="Pool", kind=Task.Kind.CLOSED_POOL)
    task.organizers.add(org)
    return task


def file(body: bytes, name="f.tsv"):
    return SimpleUploadedFile(name, body)


def received_then_loaded(client, response, task) -> str:
    """The Data section after the worker loaded what ``response`` received."""
    assert response.status_code == 302
    assert response["Location"] == f"/tasks/{task.slug}/organize/data/"
    page = client.get(response["Location"]).content.decode()
    assert "it is being checked and loaded; its state is under Uploads below." in page
    assert 'data-state="received"' in page
    load_received(task)
    return client.get(response["Location"]).content.decode()


def test_the_page_shows_the_upload_forms_the_task_takes(client, org, open_task, pool_task):
    client.force_login(org)
    text = client.get("/tasks/ner/organize/data/").content.decode()
    assert 'action="/tasks/ner/organize/reference/"' in text
    assert 'action="/annotate/ner/gold/"' in text
    assert "/organize/pool/" not in text
    # Reference sample, gold items, the reference candidates (test_lb_organize_reference_sample);
    # a data file for participants is the Task page section's (test_lb_task_page)
    assert text.count('enctype="multipart/form-data"') == 3
    assert text.count("csrfmiddlewaretoken") >= 4  # three uploads and the draw
    assert 'id="id_reference_file"' in text and 'id="id_gold_file"' in text
    text = client.get("/tasks/pool/organize/data/").content.decode()
    assert 'action="/tasks/pool/organize/pool/"' in text
    assert 'action="/annotate/pool/gold/"' in text
    assert "/organize/reference/" not in text


def test_a_reference_sample_is_uploaded_from_the_page(client, org, open_task, sent_jobs):
    client.force_login(org)
    response = client.post(
        "/tasks/ner/organize/reference/", {"file": file(b"k0\tdoc1\nk1\tdoc1\nnew\tdoc2\n")}
    )
    assert not ReferenceItem.objects.exists()  # received, not read
    page = received_then_loaded(client, response, open_task)
    assert dict(ReferenceItem.objects.values_list("item__key", "group")) == {
        "k0": "doc1",
        "k1": "doc1",
        "new": "doc2",
    }
    open_task.refresh_from_db()
    assert open_task.reference_version == 1
    assert 'data-state="loaded"' in page
    assert "loaded: 3 items, 2 documents, 1 reference version" in page
    assert "Version 1: 3 items in 2 documents." in page


def test_a_malformed_reference_sample_is_listed_by_line_and_stores_nothing(client, org, open_task):
    client.force_login(org)
    body = b"k0\tdoc1\nk1\tdoc1\textra\n\xff\tdoc\n"
    response = client.post("/tasks/ner/organize/reference/", {"file": file(body)})
    text = received_then_loaded(client, response, open_task)
    assert 'data-state="rejected"' in text and "rejected: 2 problems" in text
    assert '<span class="line">line 2</span>' in text
    assert '<span class="line">line 3</span>' in text
    assert not ReferenceItem.objects.exists()
    assert Task.objects.get(pk=open_task.pk).reference_version == 0
    assert set(Item.objects.values_list("key", flat=True)) == {"k0", "k1", "k2"}


def test_an_upload_without_a_file_is_400_and_names_the_field(client, org, open_task):
    client.force_login(org)
    response = client.post("/tasks/ner/organize/reference/", {})
    assert response.status_code == 400
    assert (
        '<a href="#id_reference_file">File</a>: This field is required.'
        in response.content.decode()
    )


def test_a_pool_is_uploaded_from_the_page_once(client, org, pool_task):
    client.force_login(org)
    payloads = b'{"key": "b", "payload": {"text": "<i>bee</i>"}}\n'
    response = client.post(
        "/tasks/pool/organize/pool/",
        {"file": file(b"a\nb\nc\n"), "payloads": file(payloads, "p.jsonl")},
    )
    page = received_then_loaded(client, response, pool_task)
    assert "loaded: 3 items" in page
    assert list(Item.objects.filter(task=pool_task).order_by("index").values_list("key")) == [
        ("a",),
        ("b",),
        ("c",),
    ]
    assert Item.objects.get(key="b").payload == {"text": "<i>bee</i>"}
    again = client.post("/tasks/pool/organize/pool/", {"file": file(b"d\n")})
    assert again.status_code == 409
    assert "already has its pool (3 items)" in again.content.decode()
    assert Item.objects.filter(task=pool_task).count() == 3


def test_a_malformed_pool_is_listed_by_line_and_stores_nothing(client, org, pool_task):
    client.force_login(org)
    response = client.post(
        "/tasks/pool/organize/pool/",
        {"file": file(b"a\nb\n"), "payloads": file(b'{"key": "zz", "payload": 1}\n', "p.jsonl")},
    )
    page = received_then_loaded(client, response, pool_task)
    assert 'data-state="rejected"' in page and "payloads: p.jsonl" in page
    assert '<span class="line">line 1</span>' in page
    assert "key &#x27;zz&#x27; is not in the pool" in page
    assert not Item.objects.filter(task=pool_task).exists()


def test_gold_items_are_uploaded_from_the_page(client, org, open_task):
    client.force_login(org)
    response = client.post(
        "/annotate/ner/gold/", {"file": file(b"\xef\xbb\xbfk0\tcorrect\nk1\tincorrect\n")}
    )
    page = received_then_loaded(client, response, open_task)
    assert dict(GoldItem.objects.values_list("item__key", "answer")) == {"k0": True, "k1": False}
    assert "loaded: 2 created, 0 updated, 0 unchanged" in page


def test_a_malformed_gold_file_is_listed_by_line_and_stores_nothing(client, org, open_task):
    client.force_login(org)
    body = b"k0\tcorrect\nk1\tmaybe\n<b>nope</b>\tcorrect\nk2\xff\tcorrect\n"
    response = client.post("/annotate/ner/gold/", {"file": file(body)})
    received_then_loaded(client, response, open_task)
    (utf8,) = OrganizerUpload.objects.all()
    assert (utf8.state, utf8.problems, utf8.problem_count) == (
        "rejected",
        [{"line": 4, "message": "is not UTF-8 text (byte 3 of the line)"}],
        1,
    )
    response = client.post("/annotate/ner/gold/", {"file": file(body.rsplit(b"\n", 2)[0])})
    text = received_then_loaded(client, response, open_task)
    latest = OrganizerUpload.objects.first()
    assert [(p["line"], p["message"]) for p in latest.problems] == [
        (2, "answer must be 'correct' or 'incorrect', got 'maybe'"),
        (3, "no item with key '<b>nope</b>' in task ner"),
    ]
    assert '<span class="line">line 3</span>' in text
    assert "&lt;b&gt;nope&lt;/b&gt;" in text and "<b>nope</b>" not in text
    assert not GoldItem.objects.exists()


def test_a_rejected_latest_upload_is_said_at_the_top_of_the_section(client, org, open_task):
    """A worker's rejection comes after the page said "received": the next visit says it above
    the forms, not only in the Uploads table at the foot of the section."""
    client.force_login(org)
    response = client.post("/annotate/ner/gold/", {"file": file(b"k0\tmaybe\n", "g.tsv")})
    text = received_then_loaded(client, response, open_task)
    upload = OrganizerUpload.objects.get()
    assert 'id="latest-upload-rejected"' in text
    banner = text.index('id="latest-upload-rejected"')
    assert banner < text.index('id="upload-gold"') < text.index('id="uploads"')
    assert f'href="#upload-{upload.pk}"' in text[banner : text.index('id="upload-gold"')]
    response = client.post("/annotate/ner/gold/", {"file": file(b"k0\tcorrect\n", "g2.tsv")})
    assert 'id="latest-upload-rejected"' not in received_then_loaded(client, response, open_task)


@pytest.mark.parametrize(
    "path", ["/tasks/ner/organize/reference/", "/annotate/ner/gold/", "/tasks/pool/organize/pool/"]
)
def test_only_the_tasks_organizers_upload(client, open_task, pool_task, path):
    other = get_user_model().objects.create_user("other-org")
    make_task(slug="theirs").organizers.add(other)
    client.force_login(other)
    assert client.post(path, {"file": file(b"k0\tcorrect\n")}).status_code == 403
    assert client.get(path).status_code == 405
    client.logout()
    response = client.post(path, {"file": file(b"k0\tcorrect\n")})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not ReferenceItem.objects.exists() and not GoldItem.objects.exists()
    assert not Item.objects.filter(task=pool_task).exists()


def test_a_draft_of_another_organizer_is_not_found(client, org):
    Task.objects.create(slug="draft", title="D", state=Task.State.DRAFT)
    client.force_login(org)
    for path in ("/tasks/draft/organize/reference/", "/annotate/draft/gold/"):
        assert client.post(path, {"file": file(b"k0\n")}).status_code == 404


def test_page_uploads_share_the_upload_throttle(client, org, open_task, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    cache.clear()
    monkeypatch.setattr(
        ScopedRateThrottle,
        "THROTTLE_RATES",
        {**ScopedRateThrottle.THROTTLE_RATES, "uploads": "2/hour"},
    )
    client.force_login(org)
    assert client.post("/annotate/ner/gold/", {"file": file(b"k0\tcorrect\n")}).status_code == 302
    assert client.post("/tasks/ner/organize/reference/", {"file": file(b"k0\n")}).status_code == 302
    response = client.post("/annotate/ner/gold/", {"file": file(b"k1\tcorrect\n")})
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "Too many uploads: try again in" in response.content.decode()
    load_received(open_task)
    assert list(GoldItem.objects.values_list("item__key", flat=True)) == ["k0"]
    cache.clear()


def test_page_uploads_over_the_tasks_limit_are_refused_unread(client, org, open_task, settings):
    Task.objects.filter(pk=open_task.pk).update(max_upload_bytes=1024)
    client.force_login(org)
    big = file(b"k0\tcorrect\n" * 200_000)  # 2.2 MB > 1 KiB + 1 MiB slack
    response = client.post("/annotate/ner/gold/", {"file": big})
    assert response.status_code == 413
    assert "over the limit of 1 KiB for this task; nothing was stored" in response.content.decode()
    settings.UPLOAD_MAX_BYTES = 64 * 1024
    response = client.post("/tasks/ner/organize/reference/", {"file": file(b"k0\n" * 30_000)})
    assert response.status_code == 413
    assert not GoldItem.objects.exists() and not ReferenceItem.objects.exists()
