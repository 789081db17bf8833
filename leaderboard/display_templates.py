"""The task display template: a declarative JSON layout of an item's payload, validated here.

``Task.display_template`` holds JSON text (blank: automatic layout). It is data only: it selects
fields and labels them and is never evaluated. This module validates it (task settings call
:func:`validate_display_template`); ``annotation.display`` renders items with it. The layouts are
documented in ``annotation/display.py`` and docs/ANNOTATION.md.
"""

from __future__ import annotations

import json
from typing import Any

LAYOUTS = ("pair", "table", "text")
MAX_TEMPLATE_CHARS = 10_000
MAX_FIELDS = 200
MAX_NAME_CHARS = 200

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
    _check_fields(spec, problems)
    _check_labels(spec, problems)
    return problems


def parse_display_template(text: str) -> dict | None:
    """The spec as a dict, or ``None`` for blank or invalid text (automatic layout)."""
    if validate_display_template(text) or not str(text or "").strip():
        return None
    return json.loads(text)
