"""Where the client keeps its server URL and token, and the environment overrides.

``~/.config/leaderboard/config.json`` (``$XDG_CONFIG_HOME`` honoured), written with mode 0600;
``LEADERBOARD_URL`` and ``LEADERBOARD_TOKEN`` override what it holds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "leaderboard" / "config.json"


@dataclass(frozen=True)
class Settings:
    url: str
    token: str | None
    last_run: int | None = None


def load_saved() -> dict:
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SystemExit(f"leaderboard: cannot read {path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def load(url: str | None = None) -> Settings:
    """The settings in effect: ``url`` (a command line option), then the environment, then the
    saved file, then the default."""
    saved = load_saved()
    return Settings(
        url=(url or os.environ.get("LEADERBOARD_URL") or saved.get("url") or DEFAULT_URL).rstrip(
            "/"
        ),
        token=os.environ.get("LEADERBOARD_TOKEN") or saved.get("token"),
        last_run=saved.get("last_run"),
    )


def save(**values) -> Path:
    """Merge ``values`` into the saved file (created with mode 0600, directory 0700)."""
    path = config_path()
    data = {**load_saved(), **values}
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2)
        out.write("\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path
