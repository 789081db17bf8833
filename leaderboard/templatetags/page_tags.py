"""``{{ text|markdown }}``: a task page's Markdown as sanitised HTML (``leaderboard.page_text``)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from ..page_text import render_markdown

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    # Safe to mark: render_markdown escapes raw HTML and sanitises what Markdown made.
    return mark_safe(render_markdown(text or ""))


@register.filter
def awaiting_acceptance(terms_teams) -> bool:
    """Whether one of these teams (``selectors.terms_of_teams``) has still to accept the terms."""
    return any(entry.acceptance is None for entry in terms_teams or ())
