"""The API asks for organizer rights one way: ``ApiView.organized_task`` (``task_for`` in the
``organizer`` role), never a permission class or an ``is_organizer`` check of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
API_MODULES = sorted(
    [
        *(REPO_ROOT / "leaderboard" / "api").glob("*.py"),
        *(REPO_ROOT / "annotation").glob("*api*.py"),
    ]
)


def organizer_checks(path: Path) -> list[str]:
    """Each place of ``path`` that decides organizer rights: a call of ``is_organizer``, a
    lookup in the organizer role, or a permission class about organizers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            roles = [k for k in node.keywords if k.arg == "role"]
            organizer_role = any(
                isinstance(k.value, ast.Constant) and k.value.value == "organizer" for k in roles
            )
            if name == "is_organizer" or (name == "task_for" and organizer_role):
                found.append(f"{path.name}:{node.lineno}: {name}")
        elif isinstance(node, ast.ClassDef) and "Organizer" in node.name:
            bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
            if "BasePermission" in bases:
                found.append(f"{path.name}:{node.lineno}: permission class {node.name}")
    return found


def test_the_api_modules_are_found():
    names = {p.name for p in API_MODULES}
    assert {"views.py", "team_views.py", "held_run_views.py", "gold_api.py"} <= names


@pytest.mark.parametrize("path", API_MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_organizer_rights_are_asked_only_through_organized_task(path):
    checks = organizer_checks(path)
    if path == REPO_ROOT / "leaderboard" / "api" / "views.py":
        # organized_task itself; and the task detail's reading tells organizers apart (to show
        # them the checklist), refusing no-one.
        assert len(checks) == 2, checks
        assert any("task_for" in c for c in checks) and any("is_organizer" in c for c in checks)
    else:
        assert checks == []
