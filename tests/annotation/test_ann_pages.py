"""The annotator pages: task list, one blind item at a time, idempotent answers."""

import re
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Judgment, VerificationRequest
from annotation.services import request_verification
from annotation.views import payload_display
from leaderboard.models import Item

from pipeline_support import add_items, add_run, annotator, make_task, make_team

pytestmark = pytest.mark.django_db

PAIR = {"left": {"given_name": "rachael", "surname": "dent", "postcode": "4129"},
        "right": {"given_name": "rachael", "surname": "dent", "postcode": "4219"}}


@pytest.fixture(autouse=True)
def no_broker(sent_messages):
    return sent_messages


@pytest.fixture
def queue():
    task = make_task(slug="pairs", title="Record pairs", question="Same person?")
    items = add_items(task, 3)
    Item.objects.filter(pk=items[0].pk).update(payload=PAIR)
    Item.objects.filter(pk=items[1].pk).update(payload={"text": "<b>bold</b> claim", "n": 3})
    team = make_team("Secret Team Name")
    add_run(task, team, [it.index for it in items], name="secret-run-name")
    request_verification(task=task, item_ids=[it.pk for it in items])
    user = annotator(task, "ann")
    return task, items, user


def _client_id(html: str) -> str:
    return re.search(r'name="client_id" value="([0-9a-f-]{36})"', html).group(1)


def _request_id(html: str) -> int:
    return int(re.search(r'name="request_id" value="(\d+)"', html).group(1))


def test_annotate_pages_need_login(client, queue):
    for url in (reverse("annotation:home"), reverse("annotation:task", args=["pairs"])):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_home_lists_annotated_tasks_with_pending_counts(client, queue):
    _task, _, user = queue
    other = make_task(slug="other", title="Not mine")
    assert other.pk
    client.force_login(user)
    html = client.get(reverse("annotation:home")).content.decode()
    assert "Record pairs" in html and "Not mine" not in html
    assert reverse("annotation:task", args=["pairs"]) in html
    assert ">3<" in html  # pending


def test_non_annotator_gets_403(client, queue):
    client.force_login(get_user_model().objects.create_user("stranger"))
    response = client.get(reverse("annotation:task", args=["pairs"]))
    assert response.status_code == 403
    assert "not an annotator" in response.content.decode()
    response = client.post(reverse("annotation:task", args=["pairs"]), {})
    assert response.status_code == 403


def test_unknown_task_is_404(client, queue):
    client.force_login(queue[2])
    assert client.get(reverse("annotation:task", args=["nope"])).status_code == 404


def test_item_page_shows_question_and_pair_but_no_run_or_team(client, queue):
    client.force_login(queue[2])
    response = client.get(reverse("annotation:task", args=["pairs"]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Same person?" in html
    assert "rachael" in html and "4129" in html and "4219" in html
    assert 'class="differs"' in html  # postcode differs
    assert "secret-run-name" not in html and "Secret Team Name" not in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert "annotation/annotate.js" in html and "<script>" not in html
    uuid.UUID(_client_id(html))


def test_answer_is_stored_once_when_posted_twice(client, queue, no_broker):
    _task, _items, user = queue
    client.force_login(user)
    html = client.get(reverse("annotation:task", args=["pairs"])).content.decode()
    data = {"request_id": _request_id(html), "client_id": _client_id(html), "answer": "correct",
            "seconds_spent": "2.5"}
    url = reverse("annotation:task", args=["pairs"])
    first = client.post(url, data)
    second = client.post(url, data)
    assert first.status_code == second.status_code == 302
    assert first["Location"] == url
    assert Judgment.objects.count() == 1
    judgment = Judgment.objects.get()
    assert judgment.answer == "correct" and judgment.seconds_spent == 2.5
    assert VerificationRequest.objects.get(pk=data["request_id"]).state == "resolved"


def test_after_an_answer_the_next_item_is_shown_then_the_empty_state(client, queue):
    _task, _items, user = queue
    client.force_login(user)
    url = reverse("annotation:task", args=["pairs"])
    seen = []
    for answer in ("correct", "incorrect", "cannot_tell"):
        html = client.get(url).content.decode()
        seen.append(_request_id(html))
        client.post(url, {"request_id": seen[-1], "client_id": _client_id(html),
                          "answer": answer})
    assert len(set(seen)) == 3
    html = client.get(url).content.decode()
    assert "Nothing to verify right now" in html
    assert Judgment.objects.filter(annotator=user).count() == 3


def test_generic_payload_is_escaped_key_value_table(client, queue):
    _task, items, user = queue
    VerificationRequest.objects.filter(item=items[0]).delete()
    client.force_login(user)
    html = client.get(reverse("annotation:task", args=["pairs"])).content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt; claim" in html and "<b>bold</b>" not in html


def test_bad_answer_is_refused_without_storing(client, queue):
    _task, _items, user = queue
    client.force_login(user)
    url = reverse("annotation:task", args=["pairs"])
    html = client.get(url).content.decode()
    response = client.post(url, {"request_id": _request_id(html), "client_id": "not-a-uuid",
                                 "answer": "correct"}, follow=True)
    assert "could not be read" in response.content.decode()
    response = client.post(url, {"request_id": _request_id(html), "client_id": str(uuid.uuid4()),
                                 "answer": "maybe"})
    assert Judgment.objects.count() == 0


def test_reused_client_id_for_another_item_shows_the_error(client, queue):
    _task, _items, user = queue
    client.force_login(user)
    url = reverse("annotation:task", args=["pairs"])
    html = client.get(url).content.decode()
    cid = _client_id(html)
    client.post(url, {"request_id": _request_id(html), "client_id": cid, "answer": "correct"})
    html = client.get(url).content.decode()
    response = client.post(url, {"request_id": _request_id(html), "client_id": cid,
                                 "answer": "correct"}, follow=True)
    assert "already used" in response.content.decode()
    assert Judgment.objects.count() == 1


def test_payload_display_shapes():
    pair = payload_display(PAIR)
    assert pair["kind"] == "pair"
    assert [r["field"] for r in pair["rows"] if r["differs"]] == ["postcode"]
    table = payload_display({"a": 1, "b": [1, 2]})
    assert table == {"kind": "table", "rows": [{"field": "a", "value": "1"},
                                               {"field": "b", "value": "[1, 2]"}]}
    assert payload_display("just text") == {"kind": "value", "value": "just text"}


def test_answers_need_the_csrf_token(queue):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(queue[2])
    url = reverse("annotation:task", args=["pairs"])
    html = client.get(url).content.decode()
    response = client.post(url, {"request_id": _request_id(html), "client_id": _client_id(html),
                                 "answer": "correct"})
    assert response.status_code == 403
    assert Judgment.objects.count() == 0
