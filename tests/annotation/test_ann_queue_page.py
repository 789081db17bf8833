"""The organizers' queue page: depth, throughput, agreement, annotators, and lifting a pause."""

import csv
import io
import re
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.models import AnnotatorPause, GoldAnswer, GoldItem, VerificationRequest
from annotation.services import pause_annotator, request_verification, submit_judgment
from leaderboard.models import LabelModelFit

from pipeline_support import add_items, annotator, make_task
from worlds import stored_snapshot

pytestmark = pytest.mark.django_db

EVIL = "<script>alert(1)</script>"


@pytest.fixture
def world():
    users = get_user_model().objects
    organizer = users.create_user("org")
    task = make_task(slug="pairs", title="Record pairs", judgments_per_item=2)
    task.organizers.add(organizer)
    items = add_items(task, 6)
    request_verification(task=task, item_ids=[it.pk for it in items[:4]])
    alice, bob = annotator(task, "alice"), annotator(task, "bob<b>")
    requests = list(VerificationRequest.objects.filter(task=task).order_by("id"))
    # Both answer the first three items: agree on two, disagree on one.
    for req, (a, b) in zip(
        requests,
        [("correct", "correct"), ("incorrect", "incorrect"), ("correct", "incorrect")],
        strict=False,
    ):
        submit_judgment(request_id=req.pk, annotator=alice, answer=a, seconds_spent=4.0)
        submit_judgment(request_id=req.pk, annotator=bob, answer=b, seconds_spent=10.0)
    submit_judgment(
        request_id=requests[0].pk,
        annotator=annotator(task, "carol"),
        answer="correct",
        seconds_spent=2.0,
    )
    # Gold: alice right on both, bob wrong on one of two.
    gold = [GoldItem.objects.create(task=task, item=it, answer=True) for it in items[4:]]
    for g, (a_ok, b_ok) in zip(gold, [(True, True), (True, False)], strict=True):
        GoldAnswer.objects.create(
            gold=g,
            annotator=alice,
            client_id=uuid.uuid4(),
            answer="correct",
            correct=a_ok,
            seconds_spent=3.0,
        )
        GoldAnswer.objects.create(
            gold=g,
            annotator=bob,
            client_id=uuid.uuid4(),
            answer="correct" if b_ok else "incorrect",
            correct=b_ok,
            seconds_spent=12.0,
        )
    pause_annotator(task=task, annotator=bob, reason="gold accuracy " + EVIL)
    return task, organizer, alice, bob


def _row(html: str, username: str) -> list[str]:
    row = re.search(r"<tr[^>]*>\s*<td>" + re.escape(username) + r"</td>(.*?)</tr>", html, re.S)
    assert row, f"no row for {username}"
    return [
        re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", c)).strip()
        for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)
    ]


def test_organizer_sees_depth_throughput_agreement_and_annotators(client, world):
    task, organizer, _alice, _bob = world
    client.force_login(organizer)
    response = client.get(reverse("annotation:queue", args=["pairs"]))
    assert response.status_code == 200
    html = response.content.decode()
    # 4 requests of 2 judgments: three have both (a split one too: there is no majority to
    # reach), the fourth has none. 7 judgments (carol's came after the item resolved) and 4 gold
    # answers.
    assert '<dd id="q-pending">1</dd>' in html
    assert '<dd id="q-outstanding">2</dd>' in html
    assert '<dd id="q-resolved">3</dd>' in html
    assert '<dd id="q-hour">11</dd>' in html and '<dd id="q-day">11</dd>' in html
    assert "<dd>0.444</dd>" in html and "<dd>0.667</dd>" in html  # 2 of 3 items agree
    assert "Krippendorff&#x27;s alpha (nominal)" in html  # the method is named
    # alice: 3 judgments + 2 gold = 5 answers, gold 2/2, median of 4,4,4,3,3 s = 4.0; no
    # estimation yet: no estimated error rates.
    assert _row(html, "alice") == ["5", "5", "2", "100%", "—", "—", "—", "4.0", "active"]
    assert 'id="queue-model"' not in html
    bob = _row(html, "bob&lt;b&gt;")
    assert bob[:8] == ["5", "5", "2", "50%", "—", "—", "—", "10.0"]
    assert bob[8].startswith("paused: gold accuracy &lt;script&gt;")
    assert "Un-pause bob&lt;b&gt;" in html
    assert EVIL not in html and "bob<b>" not in html
    assert reverse("verified_items_csv", args=["pairs"]) in html
    assert task.slug in html


def _fitted(task, label_model: dict, annotators: list) -> None:
    """Snapshot v3 with ``label_model`` in its details, and the annotator fit stored with it."""
    snapshot = stored_snapshot(
        task,
        version=3,
        engine_version="1.3",
        labels_version=11,
        n_labels=5,
        confidence=0.9,
        details={"label_model": label_model},
    )
    LabelModelFit.objects.create(
        task=task,
        snapshot=snapshot,
        indices=b"",
        values=b"",
        judgments=b"",
        says_correct=b"",
        level=0.9,
        annotators=annotators,
    )


def test_organizer_sees_each_annotators_estimated_error_rates_with_intervals(client, world):
    task, organizer, alice, bob = world
    _fitted(
        task,
        {"method": "dawid-skene-2class/em-map/louis"},
        [
            {
                "annotator": alice.pk,
                "sensitivity": [0.9712, 0.9013, 0.9887],
                "specificity": [0.9431, 0.8512, 0.9802],
                "judgments": 5,
                "gold_judgments": 2,
                "weight": 2.9071,
            },
            {
                "annotator": bob.pk,
                "sensitivity": [0.6104, 0.4011, 0.7823],
                "specificity": [0.4321, 0.2514, 0.6302],
                "judgments": 5,
                "gold_judgments": 2,
                "weight": 0.0921,
            },
        ],
    )
    client.force_login(organizer)
    html = client.get(reverse("annotation:queue", args=["pairs"])).content.decode()
    assert _row(html, "alice")[4:7] == ["0.971 [0.901, 0.989]", "0.943 [0.851, 0.980]", "2.91"]
    assert _row(html, "bob&lt;b&gt;")[4:7] == [
        "0.610 [0.401, 0.782]",
        "0.432 [0.251, 0.630]",
        "0.09",
    ]
    # carol's answer came after her item resolved: the model has nothing on her.
    assert _row(html, "carol")[4:7] == ["—", "—", "—"]
    model = re.sub(
        r"\s+", " ", re.search(r'<p class="muted" id="queue-model">(.*?)</p>', html, re.S).group(1)
    )
    assert "(dawid-skene-2class/em-map/louis), with 90% intervals, as of snapshot v3" in model
    assert 'id="queue-too-few-annotators"' not in html


def test_organizer_is_told_a_closed_pool_needs_more_annotators_for_its_looks(client, world):
    task, organizer, _alice, _bob = world
    details = {"method": "dawid-skene-2class/em-map/louis", "annotators": 1}
    _fitted(task, {**details, "too_few_annotators": True, "look_annotators": 3}, [])
    client.force_login(organizer)
    html = client.get(reverse("annotation:queue", args=["pairs"])).content.decode()
    warning = re.sub(
        r"\s+",
        " ",
        re.search(r'<p class="warning" id="queue-too-few-annotators">(.*?)</p>', html, re.S).group(
            1
        ),
    )
    assert warning.startswith("Fewer than 3 annotators have answered on this closed pool.")


def test_unpause_needs_csrf_and_lifts_the_pause(world):
    _task, organizer, _alice, bob = world
    client = Client(enforce_csrf_checks=True)
    client.force_login(organizer)
    url = reverse("annotation:unpause", args=["pairs"])
    assert client.post(url, {"username": bob.username}).status_code == 403
    assert AnnotatorPause.objects.filter(annotator=bob, lifted_at=None).exists()
    page = client.get(reverse("annotation:queue", args=["pairs"])).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = client.post(
        url, {"username": bob.username, "csrfmiddlewaretoken": token}, follow=True
    )
    assert response.status_code == 200
    assert "may answer again" in response.content.decode()
    pause = AnnotatorPause.objects.get(annotator=bob)
    assert pause.lifted_at is not None and pause.lifted_by == organizer
    assert "Un-pause" not in response.content.decode()
    # Again, or for someone unknown: a clear message, no error.
    again = client.post(
        url, {"username": bob.username, "csrfmiddlewaretoken": token}, follow=True
    ).content.decode()
    assert "was not paused" in again
    unknown = client.post(
        url, {"username": "nobody", "csrfmiddlewaretoken": token}, follow=True
    ).content.decode()
    assert "No such annotator" in unknown


def test_queue_page_refuses_annotators_and_other_organizers(client, world):
    _task, _organizer, alice, bob = world
    url = reverse("annotation:queue", args=["pairs"])
    client.force_login(alice)
    assert client.get(url).status_code == 403
    assert (
        client.post(
            reverse("annotation:unpause", args=["pairs"]), {"username": bob.username}
        ).status_code
        == 403
    )
    assert AnnotatorPause.objects.filter(annotator=bob, lifted_at=None).exists()
    other = get_user_model().objects.create_user("other-org")
    make_task(slug="elsewhere", title="Elsewhere").organizers.add(other)
    client.force_login(other)
    assert client.get(url).status_code == 403
    assert client.get(reverse("annotation:queue", args=["nope"])).status_code == 404
    client.logout()
    assert client.get(url).status_code == 302


def test_superusers_see_the_queue_and_an_empty_queue_reads_plainly(client):
    task = make_task(slug="empty", title="Empty")
    client.force_login(get_user_model().objects.create_user("staff", is_staff=True))
    assert client.get(reverse("annotation:queue", args=["empty"])).status_code == 403
    client.force_login(get_user_model().objects.create_superuser("root"))
    html = client.get(reverse("annotation:queue", args=["empty"])).content.decode()
    assert '<dd id="q-pending">0</dd>' in html
    assert "No item has two answers yet" in html and "No annotator has answered yet" in html
    assert task.pk


def test_queue_page_is_get_only(client, world):
    client.force_login(world[1])
    assert client.post(reverse("annotation:queue", args=["pairs"])).status_code == 405
    assert client.get(reverse("annotation:unpause", args=["pairs"])).status_code == 405


def test_answers_export_lists_every_answer_for_organizers_only(client, world):
    _task, organizer, alice, _bob = world
    url = reverse("annotation:answers_csv", args=["pairs"])
    client.force_login(alice)
    assert client.get(url).status_code == 403
    client.force_login(organizer)
    assert url in client.get(reverse("annotation:queue", args=["pairs"])).content.decode()
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    judgments = [r for r in rows if r["kind"] == "judgment"]
    gold = [r for r in rows if r["kind"] == "gold"]
    # 3 items x alice and bob, plus carol's late third answer on the first item.
    assert len(judgments) == 7 and len(gold) == 4
    assert {r["annotator"] for r in judgments} == {"alice", "bob<b>", "carol"}
    assert sorted(r["gold_correct"] for r in gold) == ["false", "true", "true", "true"]
    # A judgment has no known answer; a gold answer never counts as a judgment.
    assert {r["gold_correct"] for r in judgments} == {""}
    assert {r["counted"] for r in gold} == {"false"}
    carol = next(r for r in judgments if r["annotator"] == "carol")
    assert carol["counted"] == "false"  # the item had resolved: kept, not counted
    assert all(r["item_key"].startswith("k") for r in rows)
