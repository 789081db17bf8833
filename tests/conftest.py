"""Shared fixtures for the whole test tree (which mirrors the source tree)."""

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (where manage.py lives)."""
    return REPO_ROOT
