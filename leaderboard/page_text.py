"""A task's page text (overview, rules, terms) written in Markdown, as safe HTML.

Markdown is read by markdown-it-py (CommonMark with tables and strikethrough) with raw HTML
off: ``<script>`` or ``<img onerror>`` typed into the text comes out as text. Its output then
goes through nh3 (the Ammonia sanitiser) with a short allow-list, as a second line of defence:
only the tags Markdown makes, ``href`` on links (http, https, mailto or relative; never
``javascript:`` or ``data:``), every link ``rel="nofollow noopener noreferrer"``. Images are
not drawn (the site's Content-Security-Policy loads images from this site only, so an image
from elsewhere would be refused by every browser): ``![alt](url)`` stays a link. Table column
alignment becomes a class (``align-left|center|right``; a ``style`` attribute would be refused
by the policy). Headings move down two levels (``#`` is ``<h3>``) under the page's own
``<h1>`` and section ``<h2>``.

Rendering is a pure function of the text, and markdown-it-py is not fast (42 ms of CPU for
22,000 characters of Markdown with tables, 0.34 s near the limit; docs/BENCHMARKS.md), so a
result is kept under the digest of the text and :data:`RENDERER_VERSION`: in Django's default
cache (Redis, shared by every web process, when configured) and in each process (an LRU of
:data:`CACHE_SIZE` texts). Saving a task through its services renders its new texts at once
(:func:`warm`), so the first reader does not wait; a text saved in the admin is rendered by its
first reader. Nothing needs invalidating.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import nh3
from django.core.cache import cache
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore

# The longest overview, rules or terms a task may have (characters): a page stays light.
MAX_CHARS = 100_000
CACHE_SIZE = 256
# Changes with the rendering rules below, so that no HTML cached under older rules is served.
RENDERER_VERSION = 1
HEADING_SHIFT = 2
ALIGN_CLASSES = {"align-left", "align-center", "align-right"}
ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "blockquote",
    "pre",
    "code",
    "em",
    "strong",
    "s",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
_STYLE_ALIGN = re.compile(r"text-align:\s*(left|center|right)")


def _shift_headings_and_align_columns(state: StateCore) -> None:
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            level = min(6, int(token.tag[1]) + HEADING_SHIFT)
            token.tag = f"h{level}"
        elif token.type in ("th_open", "td_open"):
            style = token.attrs.pop("style", None)
            match = _STYLE_ALIGN.search(str(style or ""))
            if match:
                token.attrSet("class", f"align-{match.group(1)}")


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.core.ruler.push("page_text_layout", _shift_headings_and_align_columns)
    return md


_MARKDOWN = _parser()
_CLEANER = nh3.Cleaner(
    tags=ALLOWED_TAGS,
    clean_content_tags={"script", "style"},
    attributes={"a": {"href", "title"}, "ol": {"start"}},
    url_schemes={"http", "https", "mailto"},
    link_rel="nofollow noopener noreferrer",
    allowed_classes={"th": ALIGN_CLASSES, "td": ALIGN_CLASSES},
    strip_comments=True,
)


@lru_cache(maxsize=CACHE_SIZE)
def render_markdown(text: str) -> str:
    """``text`` (Markdown) as sanitised HTML, safe to insert into a page as it is."""
    if not text or not text.strip():
        return ""
    key = f"page-text:{RENDERER_VERSION}:{hashlib.sha256(text.encode()).hexdigest()}"
    html = cache.get(key)
    if html is None:
        html = _CLEANER.clean(_MARKDOWN.render(text))
        cache.set(key, html, timeout=None)
    return str(html)


def warm(*texts: str) -> None:
    """Render ``texts`` now (after a save), so that no reader waits for them."""
    for text in texts:
        render_markdown(text)


def normalized(text: str) -> str:
    """``text`` with line endings unified and trailing spaces dropped: what a digest covers, so
    that re-saving the same words (a browser sends CRLF) is not a new version."""
    lines = (text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def text_digest(text: str) -> str:
    """The SHA-256 of ``text`` as :func:`normalized` (the version of a task's terms); empty
    text has the empty digest ``""``."""
    plain = normalized(text)
    return hashlib.sha256(plain.encode()).hexdigest() if plain else ""
