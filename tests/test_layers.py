"""Every layer rule of ARCHITECTURE.md, checked against the code's own imports (deferred ones too).

The rules: ``evidence/`` is pure and imports nothing of the stage; ``tasks/`` never imports
``flows/``; Prefect is imported only by ``tasks/*/task.py`` and ``flows/``; within ``tasks/`` and
within ``flows/`` no folder imports one above it (the ranks below are the drawing in
ARCHITECTURE.md); and a caller reaches the library through ``evidence`` or one of its
packages' surfaces (``evidence.tables``), never a module inside one. A new folder fails here
until it is given its place.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("evidence", "tasks", "flows")

# A folder (or top-level module) of tasks/ or flows/ may import those of its own rank or lower.
TASKS_RANKS = {
    "storage": 0,
    "inputs": 1,
    "rundir": 1,
    "discover": 2,
    "lease": 2,
    "export": 2,
    "attempts": 3,
    "tables": 3,
    "follow": 3,
    "reduce": 4,
    "publish": 5,
    "compare": 6,
    "batch": 7,
}
FLOWS_RANKS = {
    "params": 0,
    "execution": 1,
    "stage": 2,
    "compare": 2,
    "export": 2,
    "batch": 3,
    "deployments": 4,
    "cli": 5,
}
PURE_FORBIDDEN = {"tasks", "flows", "prefect", "prefect_aws", "prefect_dask", "fsspec", "s3fs", "os", "pathlib"}
PREFECT = {"prefect", "prefect_aws", "prefect_dask"}


def _modules(package: str, root: Path = ROOT) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


def _imports(path: Path) -> Iterator[str]:
    """Every absolute module name the file imports, at the top or inside a function."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.relative_to(ROOT)}: relative import"
            yield node.module or ""


def _room(path: Path, root: Path) -> str:
    """The folder (or top-level module) of ``tasks/`` or ``flows/`` a file belongs to."""
    inner = path.relative_to(root).parts[1:]
    return inner[0] if len(inner) > 1 else inner[0].removesuffix(".py")


def _rank_violations(package: str, ranks: dict[str, int], root: Path = ROOT) -> list[str]:
    found = []
    for path in _modules(package, root):
        room = _room(path, root)
        if room == "__init__":
            continue
        assert room in ranks, f"{package}/{room} has no place in the layer ranks of tests/test_layers.py"
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == package and len(parts) > 1 and parts[1] != room and ranks[parts[1]] > ranks[room]:
                found.append(f"{path.relative_to(root)} imports {name}, a layer above it")
    return found


def test_evidence_imports_nothing_of_the_stage_nor_of_the_outside_world() -> None:
    """Rule 1: bytes and dicts in, typed models out; no orchestration, storage, files or environment."""
    found = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules("evidence")
        for name in _imports(path)
        if name.split(".")[0] in PURE_FORBIDDEN
    ]
    assert found == []


def test_tasks_never_import_flows_and_prefect_stays_in_task_files_and_flows() -> None:
    """Rule 2: the rest of ``tasks/`` is plain Python, testable without a Prefect server."""
    found = []
    for path in _modules("tasks"):
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "flows" or (top in PREFECT and path.name != "task.py"):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    assert found == []


@pytest.mark.parametrize(("package", "ranks"), [("tasks", TASKS_RANKS), ("flows", FLOWS_RANKS)])
def test_no_folder_imports_one_above_it(package: str, ranks: dict[str, int]) -> None:
    assert _rank_violations(package, ranks) == []


def test_callers_reach_the_library_through_its_surfaces() -> None:
    """``evidence`` or ``evidence.<package>``: the modules inside a package are its own business."""
    packages = {path.parent.name for path in (ROOT / "evidence").glob("*/__init__.py")}
    found = []
    for package in ("tasks", "flows"):
        for path in _modules(package):
            for name in _imports(path):
                parts = name.split(".")
                if parts[0] == "evidence" and (len(parts) > 2 or (len(parts) == 2 and parts[1] not in packages)):
                    found.append(f"{path.relative_to(ROOT)} imports {name}")
    assert found == []


def test_the_rank_check_sees_an_import_that_runs_up(tmp_path: Path) -> None:
    """The check itself can fail: a deferred import of ``reduce`` in ``storage`` is reported."""
    (tmp_path / "tasks" / "storage").mkdir(parents=True)
    (tmp_path / "tasks" / "reduce").mkdir()
    (tmp_path / "tasks" / "storage" / "fs.py").write_text("def f() -> None:\n    from tasks.reduce.outputs import x\n", encoding="utf-8")
    (tmp_path / "tasks" / "reduce" / "outputs.py").write_text("from tasks.storage.fs import f\n", encoding="utf-8")
    assert _rank_violations("tasks", TASKS_RANKS, tmp_path) == ["tasks/storage/fs.py imports tasks.reduce.outputs, a layer above it"]
