"""A page that leaves before its claim's reply arrives strands no lease.

The claim is made as the annotator page opens; if the annotator navigates away before the reply,
the page never learns its tokens, so it cannot release them, and the next page load used to be
refused ("You already hold 3 items ...") until they expired. A live lease that no page ever
heartbeated is handed back to its annotator's next claim; a lease a page heartbeats stays with
that page (two tabs never work the same item), and nobody else's leases are ever handed over.
"""

import json

import pytest
from django.test import Client

from annotation.models import Assignment
from annotation.services import claim_assignments, heartbeat

from pipeline_support import annotator, requested_queue

pytestmark = pytest.mark.django_db


def tokens(claim):
    return {a.token for a in claim.assignments}


def live(task, user):
    return Assignment.objects.filter(task=task, annotator=user, state="active").count()


def test_a_reload_gets_back_the_leases_of_a_claim_whose_reply_never_arrived(settings):
    n = settings.ANNOTATION_MAX_CLAIM
    task, _ = requested_queue(10)
    user = annotator(task, "ann")
    lost = claim_assignments(task=task, annotator=user, count=n)  # the page left: never seen
    assert len(lost.assignments) == n
    again = claim_assignments(task=task, annotator=user, count=n)  # the reload
    assert again.status == "ok" and tokens(again) == tokens(lost)
    assert all(a.request.item_id for a in again.assignments)  # items loaded to show
    assert live(task, user) == n  # the same leases, none more


def test_a_tab_that_heartbeats_keeps_its_items_and_a_new_tab_gets_others(settings):
    n = settings.ANNOTATION_MAX_CLAIM
    task, _ = requested_queue(10)
    user = annotator(task, "ann")
    first = claim_assignments(task=task, annotator=user, count=1)
    heartbeat(annotator=user, tokens=tokens(first))  # tab A holds its item
    lost = claim_assignments(task=task, annotator=user, count=n - 1)  # tab B left early
    second = claim_assignments(task=task, annotator=user, count=n)  # tab B reloaded
    assert tokens(second) == tokens(lost)
    assert not tokens(second) & tokens(first)
    heartbeat(annotator=user, tokens=tokens(second))
    third = claim_assignments(task=task, annotator=user, count=n)  # a third tab: the cap holds
    assert third.assignments == [] and "already hold" in third.message
    assert live(task, user) == n


def test_a_tab_that_only_says_what_it_holds_keeps_it_too(settings):
    task, _ = requested_queue(10)
    user = annotator(task, "ann")
    mine = claim_assignments(task=task, annotator=user, count=2)
    top_up = claim_assignments(task=task, annotator=user, count=3, holding=tokens(mine))
    assert len(top_up.assignments) == 1 and not tokens(top_up) & tokens(mine)


def test_nobody_else_is_handed_an_annotators_leases(settings):
    task, _ = requested_queue(10)
    a, b = annotator(task, "a"), annotator(task, "b")
    lost = claim_assignments(task=task, annotator=a, count=2)
    theirs = claim_assignments(task=task, annotator=b, count=2)
    assert not tokens(theirs) & tokens(lost)
    assert tokens(claim_assignments(task=task, annotator=a, count=2)) == tokens(lost)


def test_the_api_hands_back_the_stranded_leases(settings):
    task, _ = requested_queue(10)
    user = annotator(task, "ann")
    client = Client()
    client.force_login(user)
    url = f"/annotate/api/tasks/{task.slug}/claim"

    def post(body):
        return client.post(url, json.dumps(body), content_type="application/json")

    first = post({"count": 3, "holding": []}).json()
    second = post({"count": 3, "holding": []})
    assert second.status_code == 200
    body = second.json()
    assert body["status"] == "ok"
    assert {a["token"] for a in body["assignments"]} == {a["token"] for a in first["assignments"]}
