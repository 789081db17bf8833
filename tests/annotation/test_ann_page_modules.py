"""The annotator page's script is ES modules (``annotation/static/annotation/annotate.js`` and
``annotate/*.js``): none of them writes markup, every relative import names a module that exists,
and a hashing manifest storage that rewrites module imports ships the whole graph hashed."""

import re
import shutil
from pathlib import Path

from django.contrib.staticfiles.storage import ManifestStaticFilesStorage

ENTRY = "annotation/annotate.js"
IMPORT = re.compile(r'^(?:import|export)\b[^;]*?\bfrom\s+"(\.{1,2}/[^"]+)";', re.MULTILINE)


def _static(repo_root: Path) -> Path:
    return repo_root / "annotation/static"


def _graph(root: Path, entry: Path) -> dict[Path, list[Path]]:
    """Every module reachable from ``entry`` -> the modules it imports (resolved paths)."""
    graph: dict[Path, list[Path]] = {}
    todo = [entry.resolve()]
    while todo:
        module = todo.pop()
        if module in graph:
            continue
        graph[module] = [
            (module.parent / url).resolve() for url in IMPORT.findall(module.read_text())
        ]
        todo.extend(graph[module])
    return graph


def test_no_module_of_the_page_writes_markup(repo_root):
    modules = sorted((_static(repo_root) / "annotation").rglob("*.js"))
    assert len(modules) > 1
    for module in modules:
        script = module.read_text()
        for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert banned not in script, (module.name, banned)
        assert "new Function" not in script, module.name


def test_every_import_resolves_and_every_module_is_used(repo_root):
    root = _static(repo_root)
    graph = _graph(root, root / ENTRY)
    for module, imports in graph.items():
        for target in imports:
            assert target.is_file(), (module.name, target)
            assert root in target.parents, (module.name, target)  # inside the static folder
    assert set(graph) == {path.resolve() for path in (root / "annotation").rglob("*.js")}


class _HashingStorage(ManifestStaticFilesStorage):
    support_js_module_import_aggregation = True


def test_a_hashing_manifest_storage_names_the_hashed_modules(repo_root, tmp_path):
    shutil.copytree(_static(repo_root) / "annotation", tmp_path / "annotation")
    storage = _HashingStorage(location=tmp_path, base_url="/static/")
    names = [
        path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*") if path.is_file()
    ]
    processed = list(storage.post_process({name: (storage, name) for name in names}))
    assert not [error for _, _, error in processed if isinstance(error, Exception)]
    hashed = tmp_path / storage.stored_name(ENTRY)
    graph = _graph(tmp_path, hashed)
    assert len(graph) == len([name for name in names if name.endswith(".js")])
    for module, imports in graph.items():
        assert re.fullmatch(r".+\.[0-9a-f]{12}\.js", module.name), module.name
        for target in imports:
            assert target.is_file(), (module.name, target)
