"""The organizer console's task creation: who may create a task (``can_create_tasks``, the
``TASK_CREATION`` setting), what a created task is, refusals with field errors that store
nothing, and the display template's preview (the annotators' layout code, escaped text)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from leaderboard.models import Task

pytestmark = pytest.mark.django_db

NEW = "/tasks/new/"
PREVIEW = "/tasks/new/preview/"


def creator(name="creator"):
    user = get_user_model().objects.create_user(name)
    user.user_permissions.add(Permission.objects.get(codename="add_task"))
    return get_user_model().objects.get(pk=user.pk)


def body(**changes):
    data = {
        "slug": "linkage",
        "title": "Record linkage",
        "kind": "open",
        "description": "",
        "question": "Same person?",
        "display_template": '{"layout": "pair", "titles": ["A", "B"]}',
        "target_half_width": "0.04",
        "confidence": "0.9",
        "label_budget": "800",
        "judgments_per_item": "2",
        "max_runs_per_team": "7",
        "max_runs_per_team_per_day": "2",
    }
    data.update(changes)
    return data


def test_a_task_creator_creates_a_task_and_organizes_it(client):
    user = creator()
    client.force_login(user)
    page = client.get(NEW)
    assert page.status_code == 200
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()
    response = client.post(NEW, body())
    assert response.status_code == 302
    assert response["Location"] == "/tasks/linkage/organize/"
    task = Task.objects.get(slug="linkage")
    assert list(task.organizers.all()) == [user]
    assert (task.title, task.kind, task.state, task.question) == (
        "Record linkage",
        "open",
        "draft",
        "Same person?",
    )
    assert (task.target_half_width, task.confidence, task.label_budget) == (0.04, 0.9, 800)
    assert (task.judgments_per_item, task.max_runs_per_team, task.max_runs_per_team_per_day) == (
        2,
        7,
        2,
    )
    assert task.measures == ["precision", "recall", "f1"]
    assert client.get("/tasks/linkage/organize/").status_code == 200


def test_the_new_task_page_says_what_the_checklist_needs_in_order_and_asks_no_state(client):
    client.force_login(creator())
    page = client.get(NEW).content.decode()
    assert 'name="state"' not in page  # a new task is a draft; it opens from its checklist
    steps = re.search(r'<div class="muted" id="task-new-steps">(.*?)</div>', page, re.S).group(1)
    order = [re.sub(r"\s+", " ", s) for s in re.findall(r"<li><strong>(.*?)</strong>", steps)]
    assert order == ["Annotators", "Data", "Gold items", "Open the task"]
    assert "at least 30 true items in 10 documents" in re.sub(r"\s+", " ", steps)
    # An organizer who still sends a state (an old form) gets a draft: the field is not read.
    client.post(NEW, body(slug="eager", state="open"))
    assert Task.objects.get(slug="eager").state == Task.State.DRAFT


def test_a_closed_pool_is_created_with_its_measures(client):
    client.force_login(creator())
    response = client.post(NEW, body(slug="pool", kind="closed_pool", measures=["accuracy", "mcc"]))
    assert response.status_code == 302, response.content.decode()[:2000]
    task = Task.objects.get(slug="pool")
    assert (task.kind, task.measures) == ("closed_pool", ["accuracy", "mcc"])


def test_a_plain_user_is_refused_unless_anyone_may_create_tasks(client, settings):
    user = get_user_model().objects.create_user("plain")
    client.force_login(user)
    assert client.get(NEW).status_code == 403
    assert client.post(NEW, body()).status_code == 403
    assert not Task.objects.exists()
    assert "/tasks/new/" not in client.get("/").content.decode()
    settings.TASK_CREATION = "anyone"
    assert 'href="/tasks/new/"' in client.get("/").content.decode()
    assert client.post(NEW, body()).status_code == 302
    assert list(Task.objects.get(slug="linkage").organizers.all()) == [user]


def test_anonymous_users_are_sent_to_sign_in(client, settings):
    settings.TASK_CREATION = "anyone"
    response = client.post(NEW, body())
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"slug": "not a slug!"}, "slug", "Enter a valid"),
        ({"confidence": "1.5"}, "confidence", "less than or equal to 0.999"),
        ({"display_template": '{"layout": "cards"}'}, "display_template", "must be one of"),
        ({"kind": "open", "measures": ["mcc"]}, "measures", "an open task shows only"),
        ({"slug": "new"}, "slug", "reserved"),
        ({"title": ""}, "title", "This field is required"),
    ],
)
def test_invalid_input_is_shown_by_field_with_400_and_creates_nothing(
    client, changes, field, message
):
    client.force_login(creator())
    response = client.post(NEW, body(**changes))
    assert response.status_code == 400
    form = response.context["form"]
    assert any(message in error for error in form.errors[field]), form.errors
    assert message in response.content.decode()
    assert not Task.objects.exists()


def test_a_duplicate_slug_is_a_clear_error(client):
    Task.objects.create(slug="linkage", title="Taken")
    client.force_login(creator())
    response = client.post(NEW, body())
    assert response.status_code == 400
    assert response.context["form"].errors["slug"] == ["Task with this Slug already exists."]
    assert "Task with this Slug already exists." in response.content.decode()
    assert Task.objects.get().title == "Taken"


def test_what_the_user_typed_is_escaped_on_the_refused_page(client):
    client.force_login(creator())
    hostile = "<script>alert(1)</script>"
    response = client.post(NEW, body(title=hostile, confidence="x"))
    assert response.status_code == 400
    text = response.content.decode()
    assert hostile not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


# -- the preview --------------------------------------------------------------------------------
def test_the_preview_lays_out_a_sample_item_as_the_annotator_page_does(client):
    from annotation.display import item_display
    from leaderboard.models import Item

    client.force_login(creator())
    template = '{"layout": "pair", "titles": ["Record A", "Record B"], "fields": ["name"]}'
    sample = '{"left": {"name": "<b>Ada</b>"}, "right": {"name": "Ada"}}'
    response = client.post(PREVIEW, {"display_template": template, "sample": sample})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    data = response.json()
    assert data["problems"] == []
    assert data["display"]["titles"] == ["Record A", "Record B"]
    assert data["display"]["rows"] == [
        {"field": "name", "label": "name", "left": "<b>Ada</b>", "right": "Ada", "differs": True}
    ]
    # The very layout the annotator page gets for an item with this payload.
    task = Task(slug="t", title="t", display_template=template)
    item = Item(
        task=task,
        key="sample-item",
        payload={"left": {"name": "<b>Ada</b>"}, "right": {"name": "Ada"}},
    )
    assert data["display"] == item_display(task, item)
    # JSON, not HTML: the markup in the payload is data, escaped for any HTML reader.
    assert b"<b>" not in response.content and b"\\u003cb\\u003e" in response.content
    assert response["X-Content-Type-Options"] == "nosniff"


def test_the_preview_names_the_problems_of_a_bad_template_or_sample(client):
    client.force_login(creator())
    bad = client.post(PREVIEW, {"display_template": '{"layout": "cards"}', "sample": "{}"})
    assert bad.status_code == 400
    assert bad.json() == {
        "display": None,
        "problems": ['"layout" must be one of pair, table, text.'],
        "template_problems": ['"layout" must be one of pair, table, text.'],
        "sample_problems": [],
        "warnings": [],
        "missing_fields": [],
    }
    broken = client.post(PREVIEW, {"display_template": "", "sample": "{not json"})
    assert broken.status_code == 400
    assert broken.json()["problems"][0].startswith("The sample item is not valid JSON")
    assert broken.json()["sample_problems"] == broken.json()["problems"]
    assert broken.json()["template_problems"] == []


@pytest.mark.parametrize(
    ("template", "sample", "missing", "warning"),
    [
        (
            '{"layout": "table", "fields": ["nmae", "born"]}',
            '{"name": "Ada", "born": "1815"}',
            ["nmae"],
            'The template names the field "nmae", which the sample item does not have: its '
            "row stays empty.",
        ),
        (
            '{"layout": "pair", "fields": ["name", "brn"]}',
            '{"left": {"name": "Ada", "born": "1815"}, "right": {"name": "Ada"}}',
            ["brn"],
            'The template names the field "brn", which the sample item does not have: its row '
            "stays empty.",
        ),
        (
            '{"layout": "pair", "left": "a", "right": "b"}',
            '{"left": {"name": "Ada"}, "right": {"name": "Ada"}}',
            ["a", "b"],
            'The pair layout shows the records "a" and "b" side by side, but the sample item has '
            'no object under "a", "b": annotators would see the automatic layout instead. The '
            'item\'s fields: "left", "right".',
        ),
        (
            '{"layout": "text", "field": "sentnce"}',
            '{"sentence": "Ada was born in 1815."}',
            ["sentnce"],
            'The text layout shows the field "sentnce", which the sample item does not have: '
            "annotators would see the automatic layout instead. The item's fields: "
            '"sentence".',
        ),
        (
            '{"layout": "text", "field": "sentence", "highlight": "spn"}',
            '{"sentence": "Ada was born in 1815.", "span": "Ada"}',
            ["spn"],
            'The template names the field "spn", which the sample item does not have: nothing '
            "is marked.",
        ),
        (
            '{"layout": "table", "labels": {"nmae": "Name"}}',
            '{"name": "Ada"}',
            ["nmae"],
            '"labels" names the field "nmae", which the sample item does not have: the label is '
            "never shown.",
        ),
    ],
)
def test_the_preview_names_a_field_the_sample_item_does_not_have(
    client, template, sample, missing, warning
):
    client.force_login(creator())
    data = client.post(PREVIEW, {"display_template": template, "sample": sample}).json()
    assert data["problems"] == [] and data["display"] is not None
    assert data["missing_fields"] == missing
    assert data["warnings"][0] == warning


def test_a_template_whose_fields_the_sample_has_draws_no_warning(client):
    client.force_login(creator())
    data = client.post(
        PREVIEW,
        {
            "display_template": '{"layout": "table", "fields": ["name"], "labels": {"born": "B"}}',
            "sample": '{"name": "Ada", "born": "1815"}',
        },
    ).json()
    assert (data["warnings"], data["missing_fields"]) == ([], [])


def test_the_new_task_page_wires_the_preview_to_the_annotators_renderer(client):
    client.force_login(creator())
    text = client.get(NEW).content.decode()
    assert 'data-preview-url="/tasks/new/preview/"' in text
    assert 'data-template-field="id_display_template"' in text
    assert 'src="/static/leaderboard/template_preview.js"' in text
    from django.contrib.staticfiles import finders

    with open(finders.find("leaderboard/template_preview.js")) as file:
        script = file.read()
    assert 'import { renderDisplay } from "../annotation/annotate/item.js";' in script
    assert "innerHTML" not in script


def test_the_preview_is_for_organizers_and_task_creators(client):
    from pipeline_support import make_task

    plain = get_user_model().objects.create_user("plain")
    client.force_login(plain)
    assert client.post(PREVIEW, {"display_template": "", "sample": "{}"}).status_code == 403
    make_task(slug="theirs").organizers.add(plain)
    assert client.post(PREVIEW, {"display_template": "", "sample": "{}"}).status_code == 200
    assert client.get(PREVIEW).status_code == 405


def test_the_organize_page_previews_the_template_on_one_of_the_tasks_items(client):
    from leaderboard.models import Item

    from pipeline_support import make_task

    user = creator()
    task = make_task(slug="ner", display_template='{"layout": "table"}')
    task.organizers.add(user)
    Item.objects.create(task=task, key="k0", index=0, payload={})
    Item.objects.create(task=task, key="k1", index=1, payload={"text": "<i>Ada</i> & co"})
    client.force_login(user)
    text = client.get("/tasks/ner/organize/settings/").content.decode()
    assert 'data-preview-url="/tasks/new/preview/"' in text
    assert 'data-template-field="id_display_template"' in text
    sample = text.split('<textarea id="sample-item" rows="3">')[1].split("</textarea>")[0]
    assert sample == "{\n &quot;text&quot;: &quot;&lt;i&gt;Ada&lt;/i&gt; &amp; co&quot;\n}"
    assert 'src="/static/leaderboard/template_preview.js"' in text


def test_a_lookalike_slug_is_refused_naming_the_task(client):
    """The slug note of issue 29: slugs are unique whatever their case or lookalike letters."""
    user = creator()
    client.force_login(user)
    assert client.post(NEW, body()).status_code == 302
    page = client.post(NEW, body(slug="LINKAGE"))
    assert page.status_code == 400
    assert "looks like the slug of task &#x27;linkage&#x27;" in page.content.decode()
    refused = client.post(
        "/api/tasks/", {"slug": "Iinkage", "title": "T"}, content_type="application/json"
    )
    assert refused.status_code == 400
    assert "looks like the slug of task 'linkage'" in refused.content.decode()
    assert Task.objects.count() == 1
