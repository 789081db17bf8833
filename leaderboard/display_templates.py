"""The task display template: a declarative JSON layout of an item's payload, validated and
laid out here.

``Task.display_template`` holds JSON text (blank: automatic layout). It is data only: it selects
fields and labels them and is never evaluated. This module validates it (task settings call
:func:`validate_display_template`) and lays a payload out with it (:func:`display_for_payload`):
``annotation.display`` shows items to annotators with it, and the organizer's template preview
shows a sample item with it. The layouts are documented in ``annotation/display.py`` and
docs/ANNOTATION.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

LAYOUTS = ("pair", "table", "text")
MAX_TEMPLATE_CHARS = 10_000
MAX_FIELDS = 200
MAX_NAME_CHARS = 200
MAX_SAMPLE_CHARS = 100_000  # a sample item's payload in the organizer's preview

_KEYS = {
    "pair": {"layout", "left", "right", "fields", "labels", "titles"},
    "table": {"layout", "fields", "labels"},
    "text": {"layout", "field", "highlight", "fields", "labels", "label"},
}
DEFAULT_TITLES = ["Left", "Right"]


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME_CHARS


# --- validation ---------------------------------------------------------------------------------


def _check_fields(spec: dict, problems: list[str]) -> None:
    if "fields" not in spec:
        return
    fields = spec["fields"]
    if not isinstance(fields, list) or not fields:
        problems.append('"fields" must be a non-empty list of field names.')
        return
    if len(fields) > MAX_FIELDS:
        problems.append(f'"fields" may list at most {MAX_FIELDS} fields.')
    if not all(_is_name(f) for f in fields):
        problems.append(
            f'every entry of "fields" must be a field name of 1 to {MAX_NAME_CHARS} characters.'
        )
    elif len(set(fields)) != len(fields):
        problems.append('"fields" lists a field twice.')


def _check_labels(spec: dict, problems: list[str]) -> None:
    if "labels" in spec:
        labels = spec["labels"]
        if (
            not isinstance(labels, dict)
            or len(labels) > MAX_FIELDS
            or not all(_is_name(k) and _is_name(v) for k, v in labels.items())
        ):
            problems.append(
                f'"labels" must map field names to labels of 1 to {MAX_NAME_CHARS} characters.'
            )
    if "label" in spec and not _is_name(spec["label"]):
        problems.append(f'"label" must be text of 1 to {MAX_NAME_CHARS} characters.')


def _check_layout(spec: dict, layout: str, problems: list[str]) -> None:
    if layout == "pair":
        if spec.get("left", "left") == spec.get("right", "right"):
            problems.append('"left" and "right" must name different fields.')
        titles = spec.get("titles")
        if titles is not None and not (
            isinstance(titles, list) and len(titles) == 2 and all(_is_name(t) for t in titles)
        ):
            problems.append('"titles" must be a list of two labels.')
    if layout == "text" and "field" not in spec:
        problems.append('The text layout needs "field": the payload field holding the text.')


def validate_display_template(text: str) -> list[str]:
    """Problems with a display template (empty list: valid). Blank text is valid (automatic)."""
    if text is None or not str(text).strip():
        return []
    if len(text) > MAX_TEMPLATE_CHARS:
        return [f"The display template is longer than {MAX_TEMPLATE_CHARS} characters."]
    try:
        spec = json.loads(text)
    except ValueError as exc:
        return [f"The display template is not valid JSON: {exc}."]
    except RecursionError:
        return ["The display template nests too deeply to be read."]
    if not isinstance(spec, dict):
        return ['The display template must be a JSON object such as {"layout": "table"}.']
    layout = spec.get("layout")
    if layout not in LAYOUTS:
        return [f'"layout" must be one of {", ".join(LAYOUTS)}.']
    problems: list[str] = []
    unknown = sorted(set(spec) - _KEYS[layout])
    if unknown:
        problems.append(
            f"Unknown keys for the {layout} layout: {', '.join(unknown)} "
            f"(allowed: {', '.join(sorted(_KEYS[layout]))})."
        )
    for key in ("left", "right", "field", "highlight"):
        if key in spec and not _is_name(spec[key]):
            problems.append(f'"{key}" must be a field name of 1 to {MAX_NAME_CHARS} characters.')
    _check_layout(spec, layout, problems)
    _check_fields(spec, problems)
    _check_labels(spec, problems)
    return problems


def parse_display_template(text: str) -> dict | None:
    """The spec as a dict, or ``None`` for blank or invalid text (automatic layout)."""
    if validate_display_template(text) or not str(text or "").strip():
        return None
    return json.loads(text)


# --- laying out a payload -----------------------------------------------------------------------


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# --- rendering ----------------------------------------------------------------------------------


def _label(spec: dict, field: str) -> str:
    return (spec.get("labels") or {}).get(field, field)


def _pair(payload: dict, spec: dict) -> dict | None:
    left_key, right_key = spec.get("left", "left"), spec.get("right", "right")
    left, right = payload.get(left_key), payload.get(right_key)
    if not (isinstance(left, dict) and isinstance(right, dict)):
        return None
    fields = spec.get("fields") or (list(left) + [k for k in right if k not in left])
    rows = []
    for field in fields:
        lv, rv = _text(left.get(field)), _text(right.get(field))
        rows.append(
            {
                "field": field,
                "label": _label(spec, field),
                "left": lv,
                "right": rv,
                "differs": lv != rv,
            }
        )
    extra = [
        {"field": k, "label": _label(spec, k), "value": _text(v)}
        for k, v in payload.items()
        if k not in (left_key, right_key)
    ]
    return {
        "layout": "pair",
        "titles": list(spec.get("titles") or DEFAULT_TITLES),
        "rows": rows,
        "extra": extra,
    }


def _table(payload: dict, spec: dict) -> dict:
    fields = spec.get("fields") or list(payload)
    return {
        "layout": "table",
        "rows": [
            {"field": f, "label": _label(spec, f), "value": _text(payload.get(f))} for f in fields
        ],
    }


def _segments(text: str, highlight: Any) -> list[dict]:
    """Split ``text`` around the highlighted span (offsets ``[start, end]`` or a substring)."""
    start = end = None
    if (
        isinstance(highlight, list)
        and len(highlight) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in highlight)
    ):
        start, end = highlight
        if not 0 <= start < end <= len(text):
            start = end = None
    elif isinstance(highlight, str) and highlight:
        found = text.find(highlight)
        if found >= 0:
            start, end = found, found + len(highlight)
    if start is None:
        return [{"text": text, "mark": False}]
    parts = [
        {"text": text[:start], "mark": False},
        {"text": text[start:end], "mark": True},
        {"text": text[end:], "mark": False},
    ]
    return [p for p in parts if p["text"]]


def _text_layout(payload: dict, spec: dict) -> dict | None:
    field = spec["field"]
    if field not in payload:
        return None
    highlight = payload.get(spec["highlight"]) if "highlight" in spec else None
    extra = [
        {"field": f, "label": _label(spec, f), "value": _text(payload.get(f))}
        for f in spec.get("fields") or []
    ]
    return {
        "layout": "text",
        "label": spec.get("label") or _label(spec, field),
        "segments": _segments(_text(payload[field]), highlight),
        "extra": extra,
    }


def _automatic(payload: Any) -> dict:
    if isinstance(payload, dict):
        return _pair(payload, {}) or _table(payload, {})
    return {
        "layout": "text",
        "label": "",
        "segments": [{"text": _text(payload), "mark": False}],
        "extra": [],
    }


def display_for_payload(payload: Any, spec: dict | None, *, key: str = "") -> dict:
    """Lay out one payload with a parsed spec (``None``: automatic)."""
    if payload in (None, {}, [], ""):
        return {"layout": "key", "value": key}
    if spec is not None and isinstance(payload, dict):
        builders = {"pair": _pair, "table": lambda p, s: _table(p, s), "text": _text_layout}
        shown = builders[spec["layout"]](payload, spec)
        if shown is not None:
            return shown
    return _automatic(payload)


@dataclass(frozen=True)
class Preview:
    """The organizer's preview of a display template on a sample item: the layout annotators
    would see (``None`` when the template or the sample cannot be read), the template's problems,
    the sample's, and warnings about fields the template names that the sample lacks (a misspelt
    field shows as an empty row, or the layout falls back to the automatic one), with those
    fields (``missing_fields``) so that the page can flag their rows."""

    display: dict | None
    template_problems: list[str]
    sample_problems: list[str]
    warnings: list[str]
    missing_fields: list[str]

    @property
    def problems(self) -> list[str]:
        return self.template_problems + self.sample_problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "display": self.display,
            "problems": self.problems,
            "template_problems": self.template_problems,
            "sample_problems": self.sample_problems,
            "warnings": self.warnings,
            "missing_fields": self.missing_fields,
        }


def preview_display(template: str, sample: str) -> Preview:
    """The organizer's preview: ``sample`` (a payload as JSON text) laid out with ``template``
    exactly as the annotator page lays out an item, and what the template names that the sample
    does not have (:class:`Preview`)."""
    template_problems = validate_display_template(template)
    sample_problems: list[str] = []
    payload: Any = None
    if len(sample) > MAX_SAMPLE_CHARS:
        sample_problems.append(f"The sample item is longer than {MAX_SAMPLE_CHARS:,} characters.")
    elif sample.strip():
        try:
            payload = json.loads(sample)
        except ValueError as exc:
            sample_problems.append(f"The sample item is not valid JSON: {exc}.")
        except RecursionError:
            sample_problems.append("The sample item nests too deeply to be read.")
    if template_problems or sample_problems:
        return Preview(None, template_problems, sample_problems, [], [])
    spec = parse_display_template(template)
    display = display_for_payload(payload, spec, key="sample-item")
    if spec is None or not isinstance(payload, dict) or not payload:
        return Preview(display, [], [], [], [])
    warnings, missing = _absent_fields(spec, payload)
    return Preview(display, [], [], warnings, missing)


def _field_list(names: Any) -> str:
    names = sorted(str(name) for name in names)
    shown = ", ".join(f'"{name}"' for name in names[:20])
    return shown + (f" and {len(names) - 20} more" if len(names) > 20 else "") if names else "none"


def _absent_fields(spec: dict, payload: dict) -> tuple[list[str], list[str]]:
    """Warnings about the fields ``spec`` names that ``payload`` lacks, and those fields."""
    layout = spec["layout"]
    if layout == "pair":
        sides = (spec.get("left", "left"), spec.get("right", "right"))
        absent_sides = [side for side in sides if not isinstance(payload.get(side), dict)]
        if absent_sides:
            return [
                f'The pair layout shows the records "{sides[0]}" and "{sides[1]}" side by side, '
                f"but the sample item has no object under {_field_list(absent_sides)}: annotators "
                "would see the automatic layout instead. The item's fields: "
                f"{_field_list(payload)}."
            ], absent_sides
        records = [payload[side] for side in sides]
        available = set(records[0]) | set(records[1])
        labelled = available | set(payload)
        named = list(spec.get("fields") or [])
        where = "the records"
    elif layout == "table":
        available = labelled = set(payload)
        named = list(spec.get("fields") or [])
        where = "the item"
    else:
        if spec["field"] not in payload:
            return [
                f'The text layout shows the field "{spec["field"]}", which the sample item does '
                "not have: annotators would see the automatic layout instead. The item's "
                f"fields: {_field_list(payload)}."
            ], [spec["field"]]
        available = labelled = set(payload)
        named = [*([spec["highlight"]] if "highlight" in spec else []), *(spec.get("fields") or [])]
        where = "the item"
    missing = [name for name in named if name not in available]
    warnings = [
        f'The template names the field "{name}", which the sample item does not have: '
        + ("nothing is marked." if name == spec.get("highlight") else "its row stays empty.")
        for name in missing
    ]
    unlabelled = [
        name for name in spec.get("labels") or {} if name not in labelled and name not in missing
    ]
    warnings += [
        f'"labels" names the field "{name}", which the sample item does not have: the label is '
        "never shown."
        for name in unlabelled
    ]
    if warnings:
        warnings.append(f"The fields of {where}: {_field_list(available)}.")
    return warnings, missing + unlabelled
