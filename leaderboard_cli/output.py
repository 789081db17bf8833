"""How the client prints runs, boards, quotas, errors and upload progress.

Ranks are written as the server writes them everywhere (``leaderboard.board_text.rank_text``):
``3``, or ``2\u20135`` (an en dash); the API's ``text`` is printed, and built from the numbers the
same way when a server gave none. A terminal that cannot show the dash gets ``2-5``
(:func:`ascii_look_alike`).
"""

from __future__ import annotations

import codecs
import time

METRICS = ("precision", "recall", "f1")
# Every measure a board may show (a closed-pool task shows its organizer's choice of these).
ALL_MEASURES = ("precision", "recall", "f1", "accuracy", "balanced_accuracy", "mcc", "fbeta")


def board_measures(board: dict) -> tuple[str, ...]:
    """The measures the board's rows carry: a closed pool's (its snapshot details), else the
    three of an open task."""
    details = board.get("details") if isinstance(board.get("details"), dict) else {}
    pool = details.get("closed_pool") if isinstance(details, dict) else None
    if isinstance(pool, dict) and isinstance(pool.get("measures"), list) and pool["measures"]:
        return tuple(str(m) for m in pool["measures"])
    return METRICS


BAR = 30
EN_DASH = "\u2013"
# What a terminal whose encoding lacks them shows instead of the server's typography.
LOOK_ALIKES = {"\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00b1": "+/-", "\u2026": "..."}
LOOK_ALIKE_ERRORS = "leaderboard-look-alike"


def ascii_look_alike(error: UnicodeError) -> tuple[str, int]:
    """A ``codecs`` error handler: characters the stream cannot encode written as look-alikes
    (an en dash as ``-``, a plus-minus sign as ``+/-``), others as ``?``."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    return "".join(LOOK_ALIKES.get(c, "?") for c in text), error.end


codecs.register_error(LOOK_ALIKE_ERRORS, ascii_look_alike)


def rank_text(rank: dict | None) -> str:
    """A rank interval ``{"best", "worst", "text"?}`` as the board writes it; ``-`` if none."""
    if not isinstance(rank, dict) or rank.get("best") is None:
        return "-"
    if rank.get("text"):
        return str(rank["text"])
    best, worst = int(rank["best"]), int(rank.get("worst") or rank["best"])
    return str(best) if worst <= best else f"{best}{EN_DASH}{worst}"


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class Progress:
    """A progress bar on a terminal stream, redrawn at most ten times a second."""

    def __init__(self, total: int, stream):
        self.total, self.stream, self.last = max(total, 1), stream, 0.0

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        filled = int(BAR * done / self.total)
        self.stream.write(
            f"\ruploading [{'#' * filled}{'.' * (BAR - filled)}] "
            f"{100 * done / self.total:5.1f}% {_bytes(done)} / {_bytes(total)}"
        )
        self.stream.flush()

    def done(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def print_error(exc, stream) -> None:
    """An API error as the user should read it (the problems with their line numbers)."""
    if exc.status == 401:
        print(f"token rejected: run `leaderboard login` ({exc.message})", file=stream)
        return
    label = {
        "task_closed": "task closed",
        "no_pool": "no pool yet",
        "not_open_yet": "not open yet",
        "deadline_passed": "deadline passed",
        "over_quota": "over quota",
        "too_large": "file too large",
        "rejected": "file rejected",
        "wrong_format": "wrong format",
        "not_team_member": "not allowed",
        "duplicate": "already submitted",
        "terms_not_accepted": "terms not accepted",
        "terms_changed": "terms changed",
    }.get(exc.code, "error")
    print(f"{label}: {exc.message}", file=stream)
    if exc.code == "terms_not_accepted":
        print("  read and accept them with: leaderboard terms TASK --accept", file=stream)
    for problem in exc.problems:
        where = f"line {problem['line']}" if problem.get("line") else "-"
        if exc.message in (problem.get("message"), f"{where}: {problem.get('message')}"):
            continue  # the message is this problem (a file in the wrong format: its hint)
        print(f"  {where}: {problem.get('message', '')}", file=stream)
    if exc.total > len(exc.problems):
        print(f"  ... {exc.total - len(exc.problems)} more problems", file=stream)


def format_run(run: dict) -> str:
    state = run["state"] + (f" ({run['state_text']})" if run.get("state_text") else "")
    lines = [f"run {run['id']} {run['name']!r} ({run['team']}, task {run['task']}): {state}"]
    if run.get("reason"):
        lines.append(f"  {run['reason']}")
    if run.get("n_requested"):
        share = run["n_verified"] / run["n_requested"]
        filled = int(BAR * share)
        lines.append(
            f"  [{'#' * filled}{'.' * (BAR - filled)}] {run['n_verified']} of "
            f"{run['n_requested']} items verified"
        )
    late = " (after the deadline)" if run.get("after_deadline") else ""
    lines.append(f"  {run['n_predictions']} predictions, submitted {run['created_at']}{late}")
    for problem in run.get("errors") or []:
        where = f"line {problem['line']}" if problem.get("line") else "-"
        lines.append(f"  {where}: {problem.get('message', '')}")
    if run.get("error_count", 0) > len(run.get("errors") or []):
        lines.append(f"  ... {run['error_count'] - len(run['errors'])} more problems")
    return "\n".join(lines)


FLAG = "*"  # marks a value resting on too small a reference sample


def _interval(estimate: dict | None) -> str:
    if not estimate or estimate.get("value") is None:
        text = "-"
    else:
        text = f"{estimate['value']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"
    return text + (FLAG if estimate and estimate.get("reference_too_small") else "")


def _flag_note(flagged: list[str], why: str) -> str:
    if not flagged:
        return ""
    return f"\n{FLAG} {' and '.join(flagged)} not settled: {why}"


def format_history(history: dict) -> str:
    latest = {m: (history["metrics"].get(m) or [None])[-1] for m in METRICS}
    if not any(latest.values()):
        return "no published scores yet"
    snapshot = next(e["snapshot"] for e in latest.values() if e)
    parts = [f"{m} {_interval(latest[m])}" for m in METRICS]
    flagged = [m for m in METRICS if (latest[m] or {}).get("reference_too_small")]
    why = "the reference sample recall rests on is smaller than the minimum"
    return f"scores (snapshot {snapshot}): " + ", ".join(parts) + _flag_note(flagged, why)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
        for r in [header, *rows]
    )


def format_board(board: dict, sort: str | None = None) -> str:
    """The board as a table, ranked by ``sort`` (else F1, or a closed pool's first measure)."""
    level = f"{100 * board['confidence']:g}%"
    measures = board_measures(board)
    ranked = sort if sort in measures else "f1" if "f1" in measures else measures[0]
    title = (
        f"{board['task']}: snapshot {board['version']} ({board['n_labels']} labels, "
        f"{level} intervals, published {board['published_at']}); ranks by {ranked}"
    )
    rows = []
    for row in board["rows"]:
        ranks = row.get("rank") if isinstance(row.get("rank"), dict) else {}
        rows.append(
            [
                rank_text(ranks.get(ranked)),
                row.get("team", ""),
                row.get("name", ""),
                *(_interval(row.get(m)) for m in measures),
                (row.get("state_text") or row.get("state", ""))
                + (", after the deadline" if row.get("after_deadline") else ""),
            ]
        )
    table = _table(["rank", "team", "run", *measures, "state"], rows)
    reference = board.get("reference")
    reference = reference if isinstance(reference, dict) else {}
    flagged = [
        m
        for m in measures
        if any((r.get(m) or {}).get("reference_too_small") for r in board["rows"])
    ]
    if flagged:
        table += _flag_note(flagged, str(reference.get("text") or "too small a reference sample"))
    elif reference.get("text"):
        table += f"\n{reference['text']}"
    return title + "\n" + table + _pairs_note(board, ranked)


def _pairs_note(board: dict, measure: str) -> str:
    """The server's pair view of neighbouring runs by ``measure`` (its words), if it sent one."""
    pairs = board.get("pairs")
    listed = pairs.get(measure) if isinstance(pairs, dict) else None
    texts = [p["text"] for p in listed or [] if isinstance(p, dict) and p.get("text")]
    if not texts:
        return ""
    return f"\nneighbours by {measure}:\n" + "\n".join(f"  {t}" for t in texts)


def format_runs(runs: list[dict]) -> str:
    if not runs:
        return "no runs"
    return _table(
        ["id", "name", "team", "state", "verified", "submitted"],
        [
            [
                r["id"],
                r["name"],
                r["team"],
                r["state"],
                f"{r['n_verified']}/{r['n_requested']}",
                r["created_at"] + (" (after the deadline)" if r.get("after_deadline") else ""),
            ]
            for r in runs
        ],
    )


def format_quota(quota: dict) -> str:
    lines = []
    if quota.get("max_upload_bytes") is not None:
        lines.append(
            f"{quota['task']}: files of at most {quota['max_upload_bytes']:,} bytes "
            f"(decompressed), {quota['max_predictions_per_run']:,} predictions"
        )
    if not quota["teams"]:
        return "\n".join([*lines, f"you are in no team on {quota['task']}"])
    lines += [
        f"{t['team']}: {t['remaining_today']} of {t['limit_today']} left today, "
        f"{t['remaining_total']} of {t['limit_total']} in total"
        + (f" ({t['refunded']} refunded)" if t["refunded"] else "")
        + (f"; next slot at {t['next_slot_at']}" if t.get("next_slot_at") else "")
        for t in quota["teams"]
    ]
    return "\n".join(lines)


def format_terms(terms: dict) -> str:
    """A task's terms (their Markdown as written), their version, and where your teams stand."""
    if not terms.get("must_accept"):
        return f"task {terms['task']} has no terms: nothing to accept"
    lines = [terms["terms"].rstrip(), "", f"version {terms['digest'][:12]}"]
    for team in terms.get("teams") or []:
        if team["accepted"]:
            state = f"accepted by {team['accepted_by']} at {team['accepted_at']}"
        else:
            state = "not accepted" + (" (the terms changed since)" if team["earlier"] else "")
        lines.append(f"{team['team']}: {state}")
    return "\n".join(lines)


def format_files(listing: dict) -> str:
    """A task's data files, and whether you may download them."""
    if not listing["files"]:
        return f"task {listing['task']} has no data files"
    rows = [
        [str(f["id"]), f["kind"], _bytes(f["size"]), f["sha256"][:16], f["file_name"], f["title"]]
        for f in listing["files"]
    ]
    text = _table(["id", "kind", "size", "sha256", "file", "title"], rows)
    if not listing["may_download"]:
        text += f"\nyou may not download them yet: {listing['reason']}"
    return text
