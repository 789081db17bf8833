"""A task page's Markdown comes out as sanitised HTML: what Markdown makes (headings moved down,
lists, code, tables with alignment as classes, links with rel) and nothing a browser would run,
whatever is typed (script tags, event attributes, javascript:/data: links, nested markup)."""

from __future__ import annotations

import pytest
from hostile_markup import HOSTILE, assert_inert

from leaderboard import page_text
from leaderboard.page_text import render_markdown, text_digest


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_comes_out_inert(text):
    html = render_markdown(text)
    assert_inert(html)
    assert "<script" not in html.lower()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<script>window.__xss=1</script>", "&lt;script&gt;window.__xss=1&lt;/script&gt;"),
        ('<a href="javascript:x">link</a>', '&lt;a href="javascript:x"&gt;link&lt;/a&gt;'),
        ("<iframe src=//evil.example></iframe>", "&lt;iframe src=//evil.example&gt;"),
        ("[click](javascript:x)", "[click](javascript:x)"),
    ],
)
def test_raw_html_and_refused_links_are_shown_as_text_not_dropped(text, shown):
    # Nothing typed vanishes silently: the author sees what the page refused to make.
    assert shown in render_markdown(text)


def test_markdown_makes_headings_lists_code_tables_and_links():
    html = render_markdown(
        "# Task\n\n## Data\n\n- one\n- *two*\n\n1. first\n\n`code` and\n\n```\nblock\n```\n\n"
        "| left | right |\n|:-----|------:|\n| 1 | 2 |\n\n"
        "[site](https://example.org) [mail](mailto:a@example.org) [here](/tasks/x/) ~~old~~"
    )
    tags = [tag for tag, _ in assert_inert(html)]
    assert tags[:2] == ["h3", "h4"]  # moved down under the page's <h1> and section <h2>
    for tag in ("ul", "ol", "li", "em", "code", "pre", "table", "th", "td", "a", "s"):
        assert tag in tags, tag
    assert '<th class="align-left">left</th>' in html
    assert '<td class="align-right">2</td>' in html
    assert 'href="https://example.org"' in html and 'href="/tasks/x/"' in html


def test_an_image_stays_a_link_the_policy_would_block_it():
    html = render_markdown("![diagram](https://example.org/d.png)")
    assert "<img" not in html
    assert '<a href="https://example.org/d.png"' in html


def test_rendering_is_kept_per_text(monkeypatch):
    render_markdown.cache_clear()
    text = "# Rules\n\nBe kind."
    first = render_markdown(text)
    assert render_markdown(text) is first
    assert render_markdown.cache_info().hits == 1


def test_empty_text_renders_nothing():
    assert render_markdown("") == render_markdown("  \n ") == ""


def test_the_digest_ignores_line_endings_and_trailing_spaces_only():
    base = text_digest("Terms\nBe nice.")
    assert base == text_digest("Terms  \r\nBe nice.\r\n\r\n")
    assert base != text_digest("Terms\nBe nicer.")
    assert text_digest("") == text_digest("  \n") == ""
    assert len(base) == 64


def test_the_page_text_limit_is_a_task_setting_refusal(organizer):
    from leaderboard.services.tasks import TaskSettingsError, create_task

    long = "x" * (page_text.MAX_CHARS + 1)
    with pytest.raises(TaskSettingsError) as info:
        create_task(slug="long", title="Long", organizers=[organizer], rules=long)
    assert "rules" in info.value.field_errors
    assert "100,000 characters" in info.value.message


@pytest.mark.parametrize("html", [h for h in HOSTILE if h.startswith("<")])
def test_the_sanitiser_alone_stops_raw_html_if_markdown_ever_let_it_through(html):
    # Defence in depth: the renderer's own output goes through nh3, which would catch raw HTML
    # had the Markdown parser passed it (raw HTML on, or a parser bug).
    cleaned = page_text._CLEANER.clean(html)
    assert_inert(cleaned)
    assert "<script" not in cleaned.lower() and "<iframe" not in cleaned.lower()


def test_saving_a_task_renders_its_page_for_every_process(task):
    import hashlib

    from django.core.cache import cache

    from leaderboard.services.tasks import update_task

    rules = "# Rules\n\nNo peeking."
    key = f"page-text:{page_text.RENDERER_VERSION}:{hashlib.sha256(rules.encode()).hexdigest()}"
    cache.delete(key)
    update_task(task=task, rules=rules)
    # In the shared cache (Redis when configured), not only in this process's memory.
    assert cache.get(key) == render_markdown(rules) == "<h3>Rules</h3>\n<p>No peeking.</p>\n"
