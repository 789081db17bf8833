"""A task's people on the organize page: invitation links for annotators and co-organizers (shown
once), accepting one (signed in, or after signing up when registration is by invitation),
revoking, removing an annotator or an organizer (never the last), the annotators-may-compete
setting, and the rule's refusals on the pages; who may do any of it."""

from __future__ import annotations

import io
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Assignment
from annotation.services import claim_assignments, request_verification
from leaderboard.models import Run, TaskInvitation
from leaderboard.services.task_roles import invite_to_task
from leaderboard.services.teams import create_team

from pipeline_support import add_items, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    make = get_user_model().objects.create_user
    return {name: make(name, password="pw") for name in ("org", "ann", "bob", "other_org")}


@pytest.fixture
def task(people):
    task = make_task(slug="t1", title="Task One")
    task.organizers.add(people["org"])
    make_task(slug="t2").organizers.add(people["other_org"])
    return task


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def invitation_link(client, task, role="annotator") -> str:
    page = client.post(f"/tasks/{task.slug}/organize/invite/", {"role": role})
    assert page.status_code == 200, page.content[:300]
    text = page.content.decode()
    start = text.index('<code class="invitation-link">') + len('<code class="invitation-link">')
    return urlsplit(text[start : text.index("</code>", start)]).path


@pytest.mark.parametrize(
    ("role", "holders", "lands_on"),
    [
        ("annotator", "annotators", "/annotate/t1/"),
        ("organizer", "organizers", "/tasks/t1/organize/"),
    ],
)
def test_invite_accept_and_the_organize_page_lists_people(people, task, role, holders, lands_on):
    org = signed_in(people["org"])
    link = invitation_link(org, task, role)
    assert link.startswith("/invitations/")
    assert link.rsplit("/", 2)[-2] not in TaskInvitation.objects.get().digest
    page = org.get("/tasks/t1/organize/people/").content.decode()
    assert f'data-invitation="{TaskInvitation.objects.get().pk}"' in page
    assert link not in page  # shown once
    ann = signed_in(people["ann"])
    offer = ann.get(link)
    assert offer.status_code == 200 and f"Become an {role} of Task One" in offer.content.decode()
    accepted = ann.post(link)
    assert accepted.status_code == 302 and accepted["Location"] == lands_on
    assert getattr(task, holders).filter(pk=people["ann"].pk).exists()
    page = org.get("/tasks/t1/organize/people/").content.decode()
    assert f'data-{role}="ann"' in page and "data-invitation=" not in page
    assert ann.post(link).status_code == 410  # used


def test_an_anonymous_visitor_is_asked_to_sign_in_then_may_sign_up_by_invitation(
    people, task, settings
):
    settings.REGISTRATION = "invite"
    key = invite_to_task(task=task, role="annotator", by=people["org"]).key
    visitor = Client()
    assert visitor.get("/accounts/signup/").status_code == 403  # no invitation yet
    offer = visitor.get(f"/invitations/{key}/")
    assert offer.status_code == 200 and "Sign up" in offer.content.decode()
    assert visitor.get("/accounts/signup/").status_code == 200  # holds a valid invitation
    posted = visitor.post(f"/invitations/{key}/")
    assert posted.status_code == 302 and urlsplit(posted["Location"]).path == "/accounts/login/"
    assert not task.annotators.exists()


def test_refused_links_show_the_problem(people, task):
    ann = signed_in(people["ann"])
    assert ann.get("/invitations/forged/").status_code == 404
    team = create_team(name="Alpha <b>", members=[people["ann"]])
    Run.objects.create(task=task, team=team, name="r", submitted_by=people["ann"])
    key = invite_to_task(task=task, role="annotator", by=people["org"]).key
    refused = ann.post(f"/invitations/{key}/")
    text = refused.content.decode()
    assert refused.status_code == 409 and "Alpha &lt;b&gt;" in text and "Alpha <b>" not in text
    assert not task.annotators.exists()


def test_revoke_and_remove(people, task):
    org = signed_in(people["org"])
    invitation_link(org, task)
    invitation = TaskInvitation.objects.get()
    assert org.post(f"/tasks/t1/organize/invitations/{invitation.pk}/revoke/").status_code == 302
    invitation.refresh_from_db()
    assert invitation.revoked_at is not None
    task.annotators.add(people["ann"])
    removed = org.post(f"/tasks/t1/organize/annotators/{people['ann'].pk}/remove/")
    assert removed.status_code == 302 and not task.annotators.exists()
    assert org.post(f"/tasks/t1/organize/annotators/{people['bob'].pk}/remove/").status_code == 404
    last = org.post(f"/tasks/t1/organize/organizers/{people['org'].pk}/remove/")
    assert last.status_code == 409 and "last organizer" in last.content.decode()
    task.organizers.add(people["bob"])
    left = org.post(f"/tasks/t1/organize/organizers/{people['org'].pk}/remove/")
    assert left.status_code == 302 and left["Location"] == "/tasks/t1/"
    assert list(task.organizers.all()) == [people["bob"]]


def test_removing_an_annotator_on_the_page_revokes_their_leases(people, task):
    task.gold_rate = 0.0
    task.save(update_fields=["gold_rate"])
    task.annotators.add(people["ann"])
    request_verification(task=task, item_ids=[it.pk for it in add_items(task, 2)])
    held = claim_assignments(task=task, annotator=people["ann"], count=2).assignments
    org = signed_in(people["org"])
    assert org.post(f"/tasks/t1/organize/annotators/{people['ann'].pk}/remove/").status_code == 302
    assert {lease.token for lease in held} == set(
        Assignment.objects.filter(state="revoked").values_list("token", flat=True)
    )
    assert not Assignment.objects.filter(state="active").exists()


@pytest.mark.parametrize("who", ["ann", "other_org"])
def test_participants_and_organizers_of_another_task_are_refused(people, task, who):
    client = signed_in(people[who])
    task.annotators.add(people["bob"])
    invite_to_task(task=task, role="annotator", by=people["org"])
    invitation = TaskInvitation.objects.get()
    for path in (
        "/tasks/t1/organize/invite/",
        f"/tasks/t1/organize/invitations/{invitation.pk}/revoke/",
        f"/tasks/t1/organize/annotators/{people['bob'].pk}/remove/",
        f"/tasks/t1/organize/organizers/{people['org'].pk}/remove/",
    ):
        assert client.post(path, {"role": "annotator"}).status_code == 403, path
    assert TaskInvitation.objects.count() == 1 and invitation.revoked_at is None
    assert task.annotators.exists() and task.organizers.exists()


def test_an_organizer_of_another_task_cannot_revoke_this_tasks_invitation(people, task):
    invite_to_task(task=task, role="annotator", by=people["org"])
    invitation = TaskInvitation.objects.get()
    other = signed_in(people["other_org"])
    assert other.post(f"/tasks/t2/organize/invitations/{invitation.pk}/revoke/").status_code == 404
    invitation.refresh_from_db()
    assert invitation.revoked_at is None


def test_anonymous_is_sent_to_sign_in(people, task):
    for path in ("/tasks/t1/organize/invite/", "/tasks/t1/organize/annotators/1/remove/"):
        response = Client().post(path, {"role": "annotator"})
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not TaskInvitation.objects.exists()


def test_a_team_with_an_annotator_is_refused_on_the_submit_page(people, task):
    create_team(name="Alpha", members=[people["ann"], people["bob"]])
    task.annotators.add(people["ann"])
    upload = io.BytesIO(b"k1\t0.9\n")
    upload.name = "run.tsv"
    response = signed_in(people["bob"]).post("/tasks/t1/submit/", {"file": upload, "name": "r"})
    text = response.content.decode()
    assert response.status_code == 409 and "annotates task" in text and "ann" in text
    assert not Run.objects.exists()


def test_the_setting_is_on_the_organize_form(people, task):
    from django.forms.models import model_to_dict

    from leaderboard.forms import TASK_SETTING_FIELDS

    org = signed_in(people["org"])
    page = org.get("/tasks/t1/organize/settings/").content.decode()
    assert 'name="annotators_may_compete"' in page
    data = {
        k: ("" if v is None else v)
        for k, v in model_to_dict(task, fields=TASK_SETTING_FIELDS).items()
    }
    data["annotators_may_compete"] = "on"
    assert org.post("/tasks/t1/organize/", data).status_code == 302
    task.refresh_from_db()
    assert task.annotators_may_compete is True
