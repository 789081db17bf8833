"""Times on the pages: stored and written in UTC, shown in the viewer's time zone by
``static/leaderboard/local_time.js`` (a file: the CSP allows no inline script)."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@register.simple_tag
def local_time(moment: datetime | None) -> SafeString | str:
    """``<time datetime="ISO">YYYY-MM-DD HH:MM UTC</time>``; the script rewrites the text in the
    viewer's time zone and keeps the UTC text as the title. Empty for ``None``."""
    if moment is None:
        return ""
    utc = moment.astimezone(UTC)
    iso = utc.isoformat().replace("+00:00", "Z")
    text = f"{utc:%Y-%m-%d %H:%M} UTC"
    return format_html(
        '<time class="local-time" datetime="{}" title="{}">{}</time>', iso, text, text
    )
