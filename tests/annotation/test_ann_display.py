"""Display templates: a validated declarative layout of an item's payload, never code."""

import json
from types import SimpleNamespace

import pytest

from annotation.display import item_display, validate_display_template

PAIR = {
    "left": {"given_name": "rachael", "surname": "dent", "postcode": "4129"},
    "right": {"given_name": "rachael", "surname": "dent", "postcode": "4219", "state": "vic"},
}


def _show(payload, template="", key="k1"):
    task = SimpleNamespace(display_template=template)
    item = SimpleNamespace(payload=payload, key=key)
    shown = item_display(task, item)
    json.dumps(shown)  # JSON-serialisable
    return shown


def test_blank_template_shows_pairs_side_by_side_and_flags_differing_fields():
    shown = _show({**PAIR, "source": "febrl"})
    assert shown["layout"] == "pair"
    rows = {r["field"]: r for r in shown["rows"]}
    assert list(rows) == ["given_name", "surname", "postcode", "state"]
    assert rows["postcode"] == {
        "field": "postcode",
        "label": "postcode",
        "left": "4129",
        "right": "4219",
        "differs": True,
    }
    assert rows["surname"]["differs"] is False
    assert rows["state"]["left"] == "" and rows["state"]["differs"] is True
    assert shown["extra"] == [{"field": "source", "label": "source", "value": "febrl"}]


def test_blank_template_shows_other_objects_as_a_table_and_scalars_as_text():
    shown = _show({"text": "a claim", "n": 3, "tags": ["x"]})
    assert shown == {
        "layout": "table",
        "rows": [
            {"field": "text", "label": "text", "value": "a claim"},
            {"field": "n", "label": "n", "value": "3"},
            {"field": "tags", "label": "tags", "value": '["x"]'},
        ],
    }
    assert _show("just text")["segments"] == [{"text": "just text", "mark": False}]


@pytest.mark.parametrize("payload", [None, {}, ""])
def test_empty_payload_falls_back_to_the_item_key(payload):
    assert _show(payload, key="rec-1|rec-2") == {"layout": "key", "value": "rec-1|rec-2"}


def test_pair_template_picks_orders_and_labels_fields():
    template = json.dumps(
        {
            "layout": "pair",
            "fields": ["postcode", "surname"],
            "labels": {"postcode": "Postcode"},
            "titles": ["A", "B"],
        }
    )
    shown = _show(PAIR, template)
    assert [r["field"] for r in shown["rows"]] == ["postcode", "surname"]
    assert shown["rows"][0]["label"] == "Postcode" and shown["rows"][0]["differs"] is True
    assert shown["titles"] == ["A", "B"]


def test_pair_template_with_other_record_keys():
    template = json.dumps({"layout": "pair", "left": "a", "right": "b"})
    shown = _show({"a": {"x": 1}, "b": {"x": 2}}, template)
    assert shown["rows"] == [
        {"field": "x", "label": "x", "left": "1", "right": "2", "differs": True}
    ]


def test_template_that_does_not_fit_the_payload_falls_back_to_automatic():
    template = json.dumps({"layout": "pair", "left": "a", "right": "b"})
    assert _show(PAIR, template)["layout"] == "pair"  # automatic pair on left/right
    assert _show({"q": "?"}, template)["layout"] == "table"


def test_table_template_picks_fields():
    template = json.dumps({"layout": "table", "fields": ["n", "missing"], "labels": {"n": "Count"}})
    assert _show({"text": "t", "n": 3}, template)["rows"] == [
        {"field": "n", "label": "Count", "value": "3"},
        {"field": "missing", "label": "missing", "value": ""},
    ]


def test_text_template_highlights_offsets_or_substring():
    template = json.dumps(
        {
            "layout": "text",
            "field": "sentence",
            "highlight": "span",
            "fields": ["entity"],
            "label": "Sentence",
        }
    )
    shown = _show(
        {"sentence": "Ada Lovelace wrote notes.", "span": [0, 12], "entity": "PER"}, template
    )
    assert shown["label"] == "Sentence"
    assert shown["segments"] == [
        {"text": "Ada Lovelace", "mark": True},
        {"text": " wrote notes.", "mark": False},
    ]
    assert shown["extra"] == [{"field": "entity", "label": "entity", "value": "PER"}]
    by_text = _show({"sentence": "Ada wrote notes.", "span": "wrote"}, template)
    assert [s["mark"] for s in by_text["segments"]] == [False, True, False]
    out_of_range = _show({"sentence": "short", "span": [2, 99]}, template)
    assert out_of_range["segments"] == [{"text": "short", "mark": False}]


def test_payload_markup_is_passed_as_plain_data_not_interpreted():
    evil = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    shown = _show({"left": {"name": evil}, "right": {"name": "x"}})
    assert shown["rows"][0]["left"] == evil  # unchanged text; the page writes it as textContent


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        '{"layout": "table"}',
        '{"layout": "pair", "left": "a", "right": "b", "fields": ["x"], "labels": {"x": "X"},'
        ' "titles": ["A", "B"]}',
        '{"layout": "text", "field": "sentence", "highlight": "span"}',
    ],
)
def test_valid_templates(text):
    assert validate_display_template(text) == []


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{{ item.payload }}", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"layout": "html"}', '"layout" must be one of'),
        ('{"layout": "table", "script": "alert(1)"}', "Unknown keys"),
        ('{"layout": "table", "fields": []}', '"fields" must be a non-empty list'),
        ('{"layout": "table", "fields": ["a", "a"]}', "twice"),
        ('{"layout": "table", "fields": [1]}', "field name"),
        ('{"layout": "table", "labels": ["a"]}', '"labels" must map'),
        ('{"layout": "pair", "left": "x", "right": "x"}', "different fields"),
        ('{"layout": "pair", "titles": ["only one"]}', '"titles"'),
        ('{"layout": "text"}', 'needs "field"'),
        ('{"layout": "text", "field": ""}', '"field" must be a field name'),
    ],
)
def test_invalid_templates_are_explained(text, fragment):
    problems = validate_display_template(text)
    assert problems and any(fragment in p for p in problems), problems


def test_invalid_stored_template_falls_back_to_automatic_layout():
    assert _show(PAIR, '{"layout": "html"}')["layout"] == "pair"


def test_overlong_template_is_rejected():
    assert validate_display_template('{"layout": "table"}' + " " * 20_000)
