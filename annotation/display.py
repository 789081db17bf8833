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

The layout itself is :func:`leaderboard.display_templates.display_for_payload` (the app below
this one, so that the organizer's template preview lays out a sample item with the same code).
"""

from __future__ import annotations

from leaderboard.display_templates import (  # noqa: F401  (re-exported for callers)
    DEFAULT_TITLES,
    LAYOUTS,
    MAX_TEMPLATE_CHARS,
    display_for_payload,
    parse_display_template,
    validate_display_template,
)


def item_display(task, item) -> dict:
    """What the annotator page shows for ``item`` under ``task``'s display template.

    JSON-serialisable; built from ``item.payload`` only (``item.key`` when it is empty).
    """
    spec = parse_display_template(getattr(task, "display_template", "") or "")
    return display_for_payload(item.payload, spec, key=item.key)
