"""Hostile Markdown and HTML, and checks that HTML made from it is inert: for the task page's
text (``leaderboard.page_text``) on its own and on the pages."""

from __future__ import annotations

from html.parser import HTMLParser

from leaderboard.page_text import ALLOWED_TAGS

SAFE_SCHEMES = ("http://", "https://", "mailto:", "/", "#")


class Elements(HTMLParser):
    """Every element of an HTML fragment with its attributes."""

    def __init__(self, html: str):
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def assert_inert(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """No element but the allowed ones, no event or style attribute, links only to safe
    schemes with rel nofollow noopener; returns the elements."""
    elements = Elements(html).elements
    for tag, attrs in elements:
        assert tag in ALLOWED_TAGS, (tag, html)
        for name, value in attrs.items():
            assert not name.startswith("on") and name not in ("style", "src", "srcdoc"), html
            if name == "href":
                assert value and value.strip().lower().startswith(SAFE_SCHEMES), (value, html)
        if tag == "a":
            assert attrs.get("rel") == "nofollow noopener noreferrer", html
    return elements


HOSTILE = [
    "<script>window.__xss=1</script>",
    '"><img src=x onerror="window.__xss=1">',
    "<svg onload=window.__xss=1>",
    "[click](javascript:window.__xss=1)",
    "[click](JaVaScRiPt:window.__xss=1)",
    "[click]( javascript:window.__xss=1)",
    "[click](java&#x73;cript:window.__xss=1)",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](vbscript:msgbox)",
    "![x](javascript:window.__xss=1)",
    '<a href="javascript:window.__xss=1">link</a>',
    "<iframe src=//evil.example></iframe>",
    "<style>body{display:none}</style>",
    '<div style="background:url(javascript:1)">x</div>',
    "**<b onmouseover=window.__xss=1>bold</b>**",
    "> <details open ontoggle=window.__xss=1>",
    "`<script>`\n\n```\n</code><script>window.__xss=1</script>\n```",
    "| a |\n|---|\n| <img src=x onerror=window.__xss=1> |",
    '[a](https://example.org "title" onclick="x")',
    "<!-- <script>window.__xss=1</script> -->",
    "[x](<javascript:window.__xss=1>)",
    "<<script>script>window.__xss=1<</script>/script>",
]
