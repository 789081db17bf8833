"""The engine core (`evaluation/core/`) stays pure: no Django, Celery, DRF or project apps.

Checked three ways: statically with `ast` (every import statement in every module), at run time
(importing the whole core in a fresh interpreter loads none of them), and with import-linter's
contracts from pyproject.toml.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CORE_DIR = REPO_ROOT / "evaluation" / "core"

FORBIDDEN_TOP_LEVEL = ("django", "rest_framework", "celery", "config", "annotation", "leaderboard")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Absolute names of all that ``source`` imports, with line numbers; relative ones resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts)
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            # `from pkg import name` may import the submodule pkg.name: check both.
            found.append((node.lineno, target))
            found.extend((node.lineno, f"{target}.{alias.name}") for alias in node.names)
    return found


def is_forbidden(name: str) -> bool:
    top = name.split(".")[0]
    if top in FORBIDDEN_TOP_LEVEL:
        return True
    parts = name.split(".")
    # evaluation.<anything but core>: the rest of the package sits above the core.
    return top == "evaluation" and len(parts) >= 2 and parts[1] != "core"


def violations_in(path: Path) -> list[str]:
    module = module_name(path)
    source = path.read_text(encoding="utf-8")
    return [
        f"{path.relative_to(REPO_ROOT)}:{line}: imports {name}"
        for line, name in imported_modules(source, module, path.name == "__init__.py")
        if is_forbidden(name)
    ]


def core_modules() -> list[Path]:
    return sorted(p for p in CORE_DIR.rglob("*.py") if "__pycache__" not in p.parts)


def test_core_exists_and_has_modules() -> None:
    assert (CORE_DIR / "__init__.py").is_file(), "evaluation/core must be a package"
    assert len(core_modules()) >= 1


def test_core_imports_nothing_from_django_or_the_apps() -> None:
    modules = core_modules()
    assert modules, "no modules under evaluation/core: nothing was checked"
    problems = [problem for path in modules for problem in violations_in(path)]
    assert problems == []


@pytest.mark.parametrize(
    ("source", "module", "is_package", "bad"),
    [
        ("import django", "evaluation.core.x", False, True),
        ("from django.db import models", "evaluation.core.x", False, True),
        ("import celery.app", "evaluation.core.x", False, True),
        ("from rest_framework import serializers", "evaluation.core.x", False, True),
        ("from leaderboard.models import Run", "evaluation.core.x", False, True),
        ("import annotation", "evaluation.core.x", False, True),
        ("from config import settings", "evaluation.core.x", False, True),
        ("from evaluation import simulate", "evaluation.core.x", False, True),
        ("from .. import tasks", "evaluation.core.x", False, True),
        ("from ..models import Estimate", "evaluation.core.x", False, True),
        ("from ... import tasks", "evaluation.core.designs.y", False, True),
        ("from . import tasks", "evaluation.core", True, False),
        ("from .. import tasks", "evaluation.core", True, True),
        ("import numpy as np\nfrom scipy import stats", "evaluation.core.x", False, False),
        ("from evaluation.core import intervals", "evaluation.core.x", False, False),
        ("from evaluation import core", "evaluation.core.x", False, False),
        ("from . import intervals", "evaluation.core.x", False, False),
        ("from .designs import base", "evaluation.core.x", False, False),
        ("import djangoish", "evaluation.core.x", False, False),
    ],
)
def test_checker_tells_forbidden_from_allowed(
    source: str, module: str, is_package: bool, bad: bool
) -> None:
    names = [name for _, name in imported_modules(source, module, is_package)]
    assert any(is_forbidden(name) for name in names) is bad, names


def test_importing_the_whole_core_loads_no_django() -> None:
    """Catches indirect imports too (through a third-party package or a dynamic import)."""
    probe = """
import importlib, pkgutil, sys
import evaluation, evaluation.core
for info in pkgutil.walk_packages(evaluation.core.__path__, "evaluation.core."):
    importlib.import_module(info.name)
bad = sorted(m for m in sys.modules
             if m.split(".")[0] in {"django", "rest_framework", "celery", "kombu", "config",
                                    "annotation", "leaderboard"})
print("\\n".join(bad))
"""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == []


def lint_imports_executable() -> str | None:
    beside_python = Path(sys.executable).with_name("lint-imports")
    if beside_python.is_file():
        return str(beside_python)
    return shutil.which("lint-imports")


def test_import_linter_contracts_are_kept() -> None:
    executable = lint_imports_executable()
    if executable is None:
        pytest.skip("lint-imports is not installed (it is in requirements.txt)")
    proc = subprocess.run(
        [executable, "--no-cache"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def _contract(name_start: str) -> dict:
    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]["contracts"]
    (found,) = [c for c in contracts if c["name"].startswith(name_start)]
    return found


def _names(layer: str) -> set[str]:
    return {name.strip() for name in layer.split(":")}


def test_the_apps_layers_put_every_module_of_evaluation_but_core_above_annotation() -> None:
    """The apps' layers name the pipeline module by module (a layer cannot be `evaluation` less
    its core); the exhaustive contract inside `evaluation` fails on a module it does not list, and
    this test on a module one list has and the other lacks."""
    inside = _contract("The engine core is the ground floor of evaluation")
    apps = _contract("Apps are layered")
    assert inside["exhaustive"] is True and inside["layers"][-1] == "core"
    pipeline = {f"evaluation.{name}" for name in _names(inside["layers"][0])}
    assert _names(apps["layers"][0]) == pipeline
    assert apps["layers"][1:] == ["annotation", "leaderboard", "site_platform", "evaluation.core"]
    assert "ignore_imports" not in apps


def test_the_platform_imports_no_project_app() -> None:
    """The platform (``site_platform``) is what the apps stand on: its own contract forbids it
    every app, and the apps' layers put it under ``leaderboard``."""
    platform = _contract("The platform imports no project app")
    assert platform["source_modules"] == ["site_platform"]
    assert {"config", "evaluation", "annotation", "leaderboard"} <= set(
        platform["forbidden_modules"]
    )
    assert "ignore_imports" not in platform
