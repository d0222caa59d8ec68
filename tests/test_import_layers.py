"""Issue 48: inside ``fullscale/`` every import points down.  Its rooms (each top-level file, each
subfolder taken whole) import each other without a loop, imports made inside functions counted too:
a lower module reaching into a higher package at call time (``runs.py`` into ``training/`` for the
config check, ``vocabulary.py`` into ``training/`` for the method rows) is a loop of two rooms."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fullscale"


def _room(module: str) -> str | None:
    """The room of a dotted module under ``fullscale``: ``fullscale.training.config`` -> ``training``,
    ``fullscale.runs`` -> ``runs``; None for a module outside it or the package itself."""
    parts = module.split(".")
    if parts[0] != "fullscale" or len(parts) < 2:
        return None
    return parts[1]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported_modules(tree: ast.AST, own_package: str) -> set[str]:
    """Every module an import statement of ``tree`` names, at any depth, but not under
    ``if TYPE_CHECKING:`` (never run); a relative import resolved against ``own_package``."""
    found: set[str] = set()
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = own_package.split(".")[: len(own_package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _room_arrows() -> dict[str, set[str]]:
    arrows: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(ROOT).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        module = ".".join(parts)
        own_package = module if relative.name == "__init__" else ".".join(parts[:-1])
        room = _room(module)
        if room is None:
            continue  # fullscale/__init__.py
        targets = {_room(name) for name in _imported_modules(ast.parse(path.read_text()), own_package)}
        arrows.setdefault(room, set()).update(t for t in targets if t is not None and t != room)
    return arrows


def _loop(arrows: dict[str, set[str]]) -> list[str] | None:
    """One loop of the graph, as the rooms on it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(room: str) -> list[str] | None:
        state[room] = 1
        path.append(room)
        for target in sorted(arrows.get(room, ())):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        state[room] = 2
        path.pop()
        return None

    for room in sorted(arrows):
        if room not in state and (found := visit(room)):
            return found
    return None


def test_the_loop_finder_finds_a_loop_of_two_rooms():
    assert _loop({"runs": {"training"}, "training": {"runs", "models"}, "models": set()}) == [
        "runs", "training", "runs"]
    assert _loop({"runs": {"models"}, "training": {"runs", "models"}}) is None


def test_an_import_inside_a_function_counts_and_one_for_type_checkers_does_not():
    code = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fullscale.api import x\n"
            "def f():\n    from fullscale.training.config import y\n")
    rooms = {_room(m) for m in _imported_modules(ast.parse(code), "fullscale")}
    assert "training" in rooms and "api" not in rooms


def test_the_rooms_of_fullscale_import_each_other_without_a_loop():
    arrows = _room_arrows()
    assert {"runs", "vocabulary", "training", "puzzlemix"} <= set(arrows)  # the walk found the rooms
    assert _loop(arrows) is None, f"imports that run in a loop inside fullscale/: {' -> '.join(_loop(arrows))}"


def test_the_benchmark_vocabulary_imports_nothing():
    """``fullscale.vocabulary`` is pure data (no torch): every room may read it."""
    assert _imported_modules(ast.parse((PACKAGE / "vocabulary.py").read_text()), "fullscale") <= {
        "__future__", "__future__.annotations"}
