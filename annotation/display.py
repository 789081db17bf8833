"""How an item is shown to annotators: a declarative layout, never an executable template.

``Task.display_template`` holds JSON text (blank: automatic layout). Organizers' text is data
only: it selects fields and labels them, and it is never evaluated. The result of
:func:`item_display` is plain JSON for the page, whose script writes every string with
``textContent`` (never ``innerHTML``), so payload text stays inert.

Layouts
-------
``{"layout": "pair", "left": "left", "right": "right", "fields": [...], "labels": {...},
"titles": ["Record A", "Record B"]}``
    Two records side by side (``payload[left]`` and ``payload[right]`` must be objects); rows
    whose values differ are flagged ``differs: true``. ``fields`` picks and orders the rows
    (default: every field of the left record, then those only on the right). Other top-level
    payload keys are listed under the pair as ``extra`` rows.
``{"layout": "table", "fields": [...], "labels": {...}}``
    One row per field (default: every payload key, in payload order).
``{"layout": "text", "field": "sentence", "highlight": "span", "fields": [...]}``
    A passage of text; ``highlight`` names a payload field holding either ``[start, end]``
    character offsets or a substring to mark. ``fields`` adds rows below the text.

Blank, or a layout that does not fit an item's payload (e.g. ``pair`` without two objects),
falls back to the automatic layout: ``pair`` when the payload has ``left``/``right`` objects,
else ``table``; a non-object payload is shown as text; an empty payload shows the item's key.
Only ``item.payload`` (and ``item.key``) are used: nothing about runs, teams or answers.
"""

from __future__ import annotations

import json
from typing import Any

from leaderboard.display_templates import (  # noqa: F401  (re-exported for callers)
    DEFAULT_TITLES,
    LAYOUTS,
    MAX_TEMPLATE_CHARS,
    parse_display_template,
    validate_display_template,
)


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


def item_display(task, item) -> dict:
    """What the annotator page shows for ``item`` under ``task``'s display template.

    JSON-serialisable; built from ``item.payload`` only (``item.key`` when it is empty).
    """
    spec = parse_display_template(getattr(task, "display_template", "") or "")
    return display_for_payload(item.payload, spec, key=item.key)
