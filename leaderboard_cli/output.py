"""How the client prints runs, boards, quotas, errors and upload progress."""

from __future__ import annotations

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
        "not_open_yet": "not open yet",
        "deadline_passed": "deadline passed",
        "over_quota": "over quota",
        "too_large": "file too large",
        "rejected": "file rejected",
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
        print(f"  {where}: {problem.get('message', '')}", file=stream)
    if exc.total > len(exc.problems):
        print(f"  ... {exc.total - len(exc.problems)} more problems", file=stream)


def format_run(run: dict) -> str:
    lines = [f"run {run['id']} {run['name']!r} ({run['team']}, task {run['task']}): {run['state']}"]
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


def _interval(estimate: dict | None) -> str:
    if not estimate or estimate.get("value") is None:
        return "-"
    return f"{estimate['value']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"


def format_history(history: dict) -> str:
    latest = {m: (history["metrics"].get(m) or [None])[-1] for m in METRICS}
    if not any(latest.values()):
        return "no published scores yet"
    snapshot = next(e["snapshot"] for e in latest.values() if e)
    parts = [f"{m} {_interval(latest[m])}" for m in METRICS]
    return f"scores (snapshot {snapshot}): " + ", ".join(parts)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
        for r in [header, *rows]
    )


def format_board(board: dict) -> str:
    level = f"{100 * board['confidence']:g}%"
    title = (
        f"{board['task']}: snapshot {board['version']} ({board['n_labels']} labels, "
        f"{level} intervals, published {board['published_at']})"
    )
    measures = board_measures(board)
    ranked = "f1" if "f1" in measures else measures[0]
    rows = []
    for position, row in enumerate(board["rows"], 1):
        rank = row.get("rank", {}).get(ranked) if isinstance(row.get("rank"), dict) else None
        place = (
            f"{rank['best']}-{rank['worst']}"
            if rank and rank.get("best") != rank.get("worst")
            else str(rank["best"])
            if rank
            else str(position)
        )
        rows.append(
            [
                place,
                row.get("team", ""),
                row.get("name", ""),
                *(_interval(row.get(m)) for m in measures),
                ("provisional" if row.get("provisional") else row.get("state", ""))
                + (", after the deadline" if row.get("after_deadline") else ""),
            ]
        )
    return title + "\n" + _table(["rank", "team", "run", *measures, "state"], rows)


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
    if not quota["teams"]:
        return f"you are in no team on {quota['task']}"
    return "\n".join(
        f"{t['team']}: {t['remaining_today']} of {t['limit_today']} left today, "
        f"{t['remaining_total']} of {t['limit_total']} in total"
        + (f" ({t['refunded']} refunded)" if t["refunded"] else "")
        + (f"; next slot at {t['next_slot_at']}" if t.get("next_slot_at") else "")
        for t in quota["teams"]
    )


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
