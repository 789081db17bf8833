"""Rendering a task page's Markdown (``leaderboard.page_text``): markdown-it-py, then nh3.

Why it is cached: a page must not pay this on every request. Documents of 2 KB, 22 KB and 99 KB
(sections with a heading, emphasis, a link, code, a list and a two-column aligned table; the
largest is near ``page_text.MAX_CHARS``) are rendered ``--repeat`` times each, uncached, and
the median wall and CPU time reported per step (CPU time is what a request would cost the server
whatever else the machine is doing). The cached path (one LRU lookup) is timed too.

Usage::

    .venv/bin/python bench/page_text_render.py [--repeat 7] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from _util import REPO, machine

SECTION = (
    "## Section\n\nSome *text* with [a link](https://example.org) and `code`.\n\n- a\n- b\n\n"
    "| a | b |\n|:-|-:|\n| 1 | 2 |\n\n"
)


def timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args()
    sys.path.insert(0, REPO)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    import django

    django.setup()
    from leaderboard import page_text

    results = []
    for sections in (20, 200, 900):
        doc = SECTION * sections
        html = page_text._MARKDOWN.render(doc)
        steps = {
            "markdown": lambda doc=doc: page_text._MARKDOWN.render(doc),
            "sanitise": lambda html=html: page_text._CLEANER.clean(html),
        }
        row: dict = {"chars": len(doc)}
        for name, fn in steps.items():
            runs = [timed(fn) for _ in range(args.repeat)]
            row[f"{name}_wall_ms"] = round(statistics.median(w for w, _ in runs) * 1000, 1)
            row[f"{name}_cpu_ms"] = round(statistics.median(c for _, c in runs) * 1000, 1)
        page_text.render_markdown(doc)
        wall, _ = timed(lambda doc=doc: [page_text.render_markdown(doc) for _ in range(1000)])
        row["cached_us"] = round(wall * 1000, 2)  # 1000 lookups in ms = one lookup in µs
        results.append(row)
        print(
            f"{row['chars']:>7,} chars: markdown {row['markdown_cpu_ms']} ms CPU "
            f"({row['markdown_wall_ms']} wall), sanitise {row['sanitise_cpu_ms']} ms CPU, "
            f"cached {row['cached_us']} µs"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
