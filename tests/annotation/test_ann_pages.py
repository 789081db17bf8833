"""The annotator pages: task list, the blind item page shell, and what its API shows."""

import json
import re

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.services import request_verification
from leaderboard.models import Item

from pipeline_support import add_items, add_run, annotator, make_task, make_team

pytestmark = pytest.mark.django_db

RUN_NAME = "zz-secret-run-name"
TEAM_NAME = "Zz Secret Team Name"
EVIL = '"><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
PAIR = {
    "left": {"given_name": "rachael", "surname": "dent", "postcode": "4129"},
    "right": {"given_name": "rachael", "surname": "dent", "postcode": "4219"},
}


@pytest.fixture
def queue():
    task = make_task(slug="pairs", title="Record pairs", question="Same person? " + EVIL)
    items = add_items(task, 3)
    Item.objects.filter(pk=items[0].pk).update(payload=PAIR)
    Item.objects.filter(pk=items[1].pk).update(payload={"text": EVIL, "n": 3})
    team = make_team(TEAM_NAME)
    add_run(task, team, [it.index for it in items], name=RUN_NAME)
    request_verification(task=task, item_ids=[it.pk for it in items])
    user = annotator(task, "ann")
    return task, items, user


def _api(name, *args):
    return reverse(f"annotation:{name}", args=args) if args else reverse(f"annotation:{name}")


def test_annotate_pages_need_login(client, queue):
    for url in (
        reverse("annotation:home"),
        reverse("annotation:task", args=["pairs"]),
        reverse("annotation:queue", args=["pairs"]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_home_lists_annotated_tasks_and_organized_queues(client, queue):
    task, _, user = queue
    other = make_task(slug="other", title="Not mine")
    mine = make_task(slug="mine", title="Organized by me")
    mine.organizers.add(user)
    client.force_login(user)
    html = client.get(reverse("annotation:home")).content.decode()
    assert "Record pairs" in html and "Not mine" not in html and other.pk
    assert reverse("annotation:task", args=["pairs"]) in html
    assert reverse("annotation:queue", args=["mine"]) in html
    assert reverse("annotation:queue", args=["pairs"]) not in html  # annotator, not organizer
    assert task.question not in html  # escaped, never raw
    assert "&lt;script&gt;" in html
    assert '<td class="num">3</td>' in html  # three items wait for this annotator


def test_non_annotator_gets_403(client, queue):
    client.force_login(get_user_model().objects.create_user("stranger"))
    response = client.get(reverse("annotation:task", args=["pairs"]))
    assert response.status_code == 403
    assert "not an annotator" in response.content.decode()


def test_unknown_task_is_404(client, queue):
    client.force_login(queue[2])
    assert client.get(reverse("annotation:task", args=["nope"])).status_code == 404


def test_page_shell_has_the_keys_the_question_and_nothing_about_runs(client, queue):
    task, _, user = queue
    client.force_login(user)
    response = client.get(reverse("annotation:task", args=["pairs"]))
    html = response.content.decode()
    assert response.status_code == 200
    for label in (
        "Correct (<kbd>y</kbd>)",
        "Incorrect (<kbd>n</kbd>)",
        "Can't tell (<kbd>s</kbd>)",
        "Undo (<kbd>u</kbd>)",
        "Help (<kbd>?</kbd>)",
    ):
        assert label in html
    assert 'aria-live="polite"' in html
    assert "Same person? &quot;&gt;&lt;img src=x onerror=" in html
    assert task.question not in html and "<img" not in html
    assert RUN_NAME not in html and TEAM_NAME not in html
    # The page never carries payload (it comes through the API and is written as textContent).
    assert "rachael" not in html
    assert "annotation/annotate.js" in html and "annotation/annotate.css" in html
    config = json.loads(
        re.search(r'<script id="ann-config" type="application/json">(.*?)</script>', html).group(1)
    )
    assert config == {
        "slug": "pairs",
        "user": user.pk,
        "api": "/annotate/api/",
        "prefetch": settings.ANNOTATION_MAX_CLAIM,
    }
    assert re.search(r'<meta name="csrf-token" content="[^"]+">', html)


def test_page_script_writes_item_text_with_text_content_only(repo_root):
    script = (repo_root / "annotation/static/annotation/annotate.js").read_text()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script
    assert "eval(" not in script and "document.write" not in script
    assert "textContent" in script


def test_queue_page_only_for_organizers_of_the_task_and_staff(client, queue):
    _task, _, user = queue
    url = reverse("annotation:queue", args=["pairs"])
    client.force_login(user)  # annotator only
    assert client.get(url).status_code == 403
    other_organizer = get_user_model().objects.create_user("org2")
    make_task(slug="elsewhere", title="Elsewhere").organizers.add(other_organizer)
    client.force_login(other_organizer)
    assert client.get(url).status_code == 403
    assert (
        client.post(reverse("annotation:unpause", args=["pairs"]), {"username": "ann"}).status_code
        == 403
    )
    client.force_login(get_user_model().objects.create_user("boss", is_staff=True))
    assert client.get(reverse("annotation:queue", args=["nope"])).status_code == 404


def test_claimed_items_carry_only_their_display_never_runs_or_teams(client, queue):
    _task, _items, user = queue
    client.force_login(user)
    response = client.post(
        _api("api_claim", "pairs"), {"count": 3}, content_type="application/json"
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert RUN_NAME not in body and TEAM_NAME not in body
    data = response.json()
    assert data["status"] == "ok" and len(data["assignments"]) == 3
    assert all(set(a) == {"token", "expires_at", "display"} for a in data["assignments"])
    layouts = sorted(a["display"]["layout"] for a in data["assignments"])
    assert layouts == ["key", "pair", "table"]
    table = next(a["display"] for a in data["assignments"] if a["display"]["layout"] == "table")
    # Payload markup travels as plain data; the page writes it with textContent.
    assert {"field": "text", "label": "text", "value": EVIL} in table["rows"]
    progress = client.get(_api("api_progress", "pairs")).content.decode()
    assert RUN_NAME not in progress and TEAM_NAME not in progress


def test_the_tasks_display_template_shapes_what_the_api_shows(client, queue):
    task, items, user = queue
    task.display_template = json.dumps(
        {"layout": "table", "fields": ["n"], "labels": {"n": "Count"}}
    )
    task.save(update_fields=["display_template"])
    Item.objects.filter(pk=items[0].pk).update(payload={"text": "a", "n": 7})
    client.force_login(user)
    data = client.post(
        _api("api_claim", "pairs"), {"count": 3}, content_type="application/json"
    ).json()
    tables = [a["display"] for a in data["assignments"] if a["display"]["layout"] == "table"]
    assert {"layout": "table", "rows": [{"field": "n", "label": "Count", "value": "7"}]} in tables
    assert {"layout": "table", "rows": [{"field": "n", "label": "Count", "value": "3"}]} in tables
