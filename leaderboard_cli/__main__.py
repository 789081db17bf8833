"""``leaderboard``: save a token, submit runs, follow them, print scores.

Examples::

    leaderboard --url https://board.example.org login          # asks for username and password
    leaderboard login --token 0123abcd...                      # or saves a token you have
    leaderboard submit linkage run.tsv --name "bm25 + rerank"  # progress bar for large files
    leaderboard submit linkage bm25.tsv                        # named "bm25" (the file's stem)
    leaderboard status 17
    leaderboard wait 17 --timeout 3600
    leaderboard scores linkage
    leaderboard quota linkage                                  # limits and submissions left
    leaderboard withdraw 17
    leaderboard terms linkage --accept                         # the task's terms, for your team
    leaderboard files linkage                                  # its data files
    leaderboard download linkage 3                             # one of them, checked by SHA-256

Exit codes (every command): 0 done, 1 other error, 2 usage (e.g. no run id and none submitted
from here), 3 token rejected, 4 file rejected (an upload refused for its content, its problems by
line or one wrong-format hint: CSV, a header line, UTF-16; or status/wait on a rejected run),
5 refused (task closed, over quota, not allowed, too large, the same file already submitted),
6 not found, 7 server unreachable, 8 timed out waiting, 9 run failed or withdrawn (status or
wait on a failed or withdrawn run).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import time

from . import config
from .client import ApiError, Client, ConnectionFailed
from .output import (
    ALL_MEASURES,
    LOOK_ALIKE_ERRORS,
    Progress,
    format_board,
    format_files,
    format_history,
    format_quota,
    format_run,
    format_runs,
    format_terms,
    print_error,
)

EXIT_ERROR, EXIT_USAGE, EXIT_AUTH, EXIT_REJECTED, EXIT_REFUSED = 1, 2, 3, 4, 5
EXIT_NOT_FOUND, EXIT_UNREACHABLE, EXIT_TIMEOUT, EXIT_FAILED = 6, 7, 8, 9
TERMINAL = {"rejected", "scored", "partial", "failed", "withdrawn"}
# A run's state as an exit code (status, wait): the others are 0.
STATE_EXIT = {"rejected": EXIT_REJECTED, "failed": EXIT_FAILED, "withdrawn": EXIT_FAILED}


class UsageError(Exception):
    """The command line lacks something argparse cannot tell (exit code 2)."""


# States whose reason `wait` prints as it changes: how far validation has got, why a run is held.
REASON_SHOWN = {"received", "validating", "held"}
PROGRESS_FROM_BYTES = 1024 * 1024


def _client(args, *, need_token: bool = True) -> Client:
    settings = config.load(args.url)
    if need_token and not settings.token:
        raise ApiError(401, {"error": {"code": "not_authenticated", "message": "no token saved"}})
    return Client(settings.url, settings.token)


# -- commands ------------------------------------------------------------------------------------
def cmd_login(args) -> int:
    settings = config.load(args.url)
    token = args.token
    if token is None:
        username = args.username or input("username: ")
        password = (
            sys.stdin.readline().rstrip("\n")
            if args.password_stdin
            else getpass.getpass("password: ")
        )
        anonymous = Client(settings.url)
        credentials = {"username": username, "password": password}
        try:
            token = anonymous.post("/api/token/", credentials)["key"]
        except ApiError as exc:
            if exc.code != "token_exists":
                raise
            token = anonymous.post("/api/token/rotate/", credentials)["key"]
            print("you had a token: it was replaced (the old one no longer works)", file=sys.stderr)
    me = Client(settings.url, token).get("/api/me/")
    path = config.save(url=settings.url, token=token)
    teams = ", ".join(me.get("teams") or []) or "no team"
    print(f"logged in to {settings.url} as {me['username']} ({teams}); token saved in {path}")
    return 0


def cmd_submit(args) -> int:
    client = _client(args)
    try:
        size = _file_size(args.file)
    except OSError as exc:
        print(f"leaderboard: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    show = not args.no_progress and size >= PROGRESS_FROM_BYTES
    progress = Progress(size, sys.stderr) if show else None
    fields = {"name": args.name, "description": args.description, "team": args.team}
    try:
        run = client.upload(
            f"/api/tasks/{args.task}/runs/",
            args.file,
            fields,
            progress=progress.update if progress else None,
        )
    finally:
        if progress:
            progress.done()
    config.save(last_run=run["id"])
    print(
        f"run {run['id']} submitted to {args.task}: {run['state']} (a worker validates the "
        "file next: problems, if any, are reported by line)"
    )
    print(f"follow it with: leaderboard wait {run['id']}")
    return 0


def _file_size(path: str) -> int:
    with open(path, "rb"):  # readable, not a directory
        return os.path.getsize(path)


def _run_id(args) -> int:
    if args.run is not None:
        return args.run
    saved = config.load(args.url).last_run
    if saved is None:
        raise UsageError("which run? give its id (no run submitted from here yet)")
    return saved


def cmd_status(args) -> int:
    run = _client(args).get(f"/api/runs/{_run_id(args)}/")
    print(format_run(run))
    return STATE_EXIT.get(run["state"], 0)


def cmd_wait(args) -> int:
    client = _client(args)
    run_id = _run_id(args)
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    last = None
    while True:
        run = client.get(f"/api/runs/{run_id}/")
        # While the file is validated its reason tells how far the worker has read; a held run's
        # why it waits for the organizers.
        shown = (run["state"], run.get("reason") if run["state"] in REASON_SHOWN else None)
        if shown != last:
            print(
                f"run {run_id}: {run['state']}"
                + (
                    f" ({run['n_verified']} of {run['n_requested']} items verified)"
                    if run.get("n_requested")
                    else ""
                )
                + (f": {shown[1]}" if shown[1] else ""),
                file=sys.stderr,
            )
            last = shown
        if run["state"] in TERMINAL:
            break
        if deadline is not None and time.monotonic() + args.interval > deadline:
            print(
                f"leaderboard: run {run_id} is still {run['state']} after {args.timeout:g} s",
                file=sys.stderr,
            )
            return EXIT_TIMEOUT
        time.sleep(args.interval)
    print(format_run(run))
    if run["state"] in ("scored", "partial"):
        print(format_history(client.get(f"/api/runs/{run_id}/history/")))
    return STATE_EXIT.get(run["state"], 0)


def cmd_scores(args) -> int:
    board = _client(args, need_token=False).get(
        f"/api/tasks/{args.task}/board/", sort=args.sort, order=args.order
    )
    print(format_board(board, args.sort))
    return 0


def cmd_runs(args) -> int:
    runs = list(_client(args).pages(f"/api/tasks/{args.task}/runs/", state=args.state))
    print(format_runs(runs))
    return 0


def cmd_quota(args) -> int:
    print(format_quota(_client(args).get(f"/api/tasks/{args.task}/quota/")))
    return 0


def cmd_withdraw(args) -> int:
    run = _client(args).post(f"/api/runs/{args.run}/withdraw/")
    print(format_run(run))
    return 0


def cmd_terms(args) -> int:
    client = _client(args, need_token=args.accept)
    terms = client.get(f"/api/tasks/{args.task}/terms/")
    print(format_terms(terms))
    if args.accept and terms.get("must_accept"):
        # The version just printed: refused (terms_changed) if the organizers changed it since.
        fields = {"team": args.team or "", "digest": terms["digest"]}
        accepted = client.post(f"/api/tasks/{args.task}/terms/", fields)
        print(f"{accepted['team']} accepted the terms of {args.task} ({accepted['digest'][:12]})")
    return 0


def cmd_files(args) -> int:
    print(format_files(_client(args, need_token=False).get(f"/api/tasks/{args.task}/files/")))
    return 0


def cmd_download(args) -> int:
    client = _client(args, need_token=False)
    listing = client.get(f"/api/tasks/{args.task}/files/{args.file}/")
    dest = args.output or listing["file_name"]
    size, sha256 = client.download(listing["download_url"], dest)
    if sha256 != listing["sha256"]:
        os.remove(dest)
        print(f"leaderboard: {dest}: SHA-256 differs from the listing's; removed", file=sys.stderr)
        return EXIT_ERROR
    print(f"{dest}: {size:,} bytes, SHA-256 {sha256} (as listed)")
    return 0


# -- parsing and errors ----------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    summary, _, details = __doc__.replace("``", "").replace("::", ":").partition("\n")
    top = argparse.ArgumentParser(
        prog="leaderboard",
        description=summary,
        epilog=details,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument(
        "--url", help=f"the server (default: saved, $LEADERBOARD_URL, {config.DEFAULT_URL})"
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("login", help="save an API token (asks for username and password)")
    p.add_argument("--token", help="save this token instead of asking for a password")
    p.add_argument("--username")
    p.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input",
    )
    p.set_defaults(func=cmd_login)

    p = sub.add_parser("submit", help="submit a run file (TSV or JSON Lines, gzip accepted)")
    p.add_argument("task")
    p.add_argument("file")
    p.add_argument(
        "--name", help="shown on the board (default: the file name without its extension)"
    )
    p.add_argument("--description", default="")
    p.add_argument("--team", default=None, help="needed only if you are in several teams")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_submit)

    for name, func, text in (
        ("status", cmd_status, "show a run's state and progress"),
        ("wait", cmd_wait, "wait until a run is scored, print scores"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("run", type=int, nargs="?", help="run id (default: your last submission)")
        if name == "wait":
            p.add_argument("--timeout", type=float, default=None, help="seconds (default: none)")
            p.add_argument("--interval", type=float, default=10.0, help="seconds between polls")
        p.set_defaults(func=func)

    p = sub.add_parser("scores", help="print a task's published leaderboard with intervals")
    p.add_argument("task")
    p.add_argument(
        "--sort", choices=ALL_MEASURES, help="one of the task's measures (default: as stored)"
    )
    p.add_argument("--order", choices=["desc", "asc"])
    p.set_defaults(func=cmd_scores)

    p = sub.add_parser("runs", help="list your team's runs on a task")
    p.add_argument("task")
    p.add_argument("--state", action="append", help="only runs in this state (repeatable)")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("terms", help="print a task's terms; --accept accepts them for your team")
    p.add_argument("task")
    p.add_argument("--accept", action="store_true", help="accept the terms printed")
    p.add_argument("--team", default=None, help="needed only if you are in several teams")
    p.set_defaults(func=cmd_terms)

    p = sub.add_parser("files", help="list a task's data files")
    p.add_argument("task")
    p.set_defaults(func=cmd_files)

    p = sub.add_parser("download", help="download one of a task's data files (by its id)")
    p.add_argument("task")
    p.add_argument("file", type=int, help="the file's id (see `leaderboard files TASK`)")
    p.add_argument("--output", "-o", help="where to write it (default: its name, here)")
    p.set_defaults(func=cmd_download)

    p = sub.add_parser(
        "quota", help="show a task's upload limits and your teams' remaining submissions"
    )
    p.add_argument("task")
    p.set_defaults(func=cmd_quota)

    p = sub.add_parser(
        "withdraw",
        help="withdraw a run for good (it leaves the board; its slot comes back only if nothing "
        "was asked of annotators for it yet)",
    )
    p.add_argument("run", type=int)
    p.set_defaults(func=cmd_withdraw)
    return top


def exit_code(exc: ApiError) -> int:
    if exc.status == 401:
        return EXIT_AUTH
    if exc.code == "wrong_format" or (
        exc.status == 400 and (exc.code == "rejected" or any(p.get("line") for p in exc.problems))
    ):
        return EXIT_REJECTED
    if exc.status in (403, 409, 413, 429):
        return EXIT_REFUSED
    if exc.status == 404:
        return EXIT_NOT_FOUND
    return EXIT_ERROR


def _show_any_text() -> None:
    """Print the server's en dashes and plus-minus signs on any terminal: look-alikes where its
    encoding lacks them, instead of a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=LOOK_ALIKE_ERRORS)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    _show_any_text()
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"leaderboard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ApiError as exc:
        print_error(exc, sys.stderr)
        return exit_code(exc)
    except ConnectionFailed as exc:
        print(
            f"leaderboard: {exc} (is the server running? set --url or LEADERBOARD_URL)",
            file=sys.stderr,
        )
        return EXIT_UNREACHABLE
    except ValueError as exc:  # a bad URL
        print(f"leaderboard: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("leaderboard: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
