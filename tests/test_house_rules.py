"""The house rules between the core and its plugins, read from the code.

Plugins reach the core through one door, :mod:`omoide.api` (and, in test-support code,
:mod:`omoide.testing`); the core knows no plugin; the door is cheap to open and every
name it lists is there. The code is read with :mod:`ast`: every import counts, at the
top of a module, inside a function or under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core/src/omoide"
PLUGIN_SOURCES = sorted(ROOT.glob("plugins/*/src"))

HEAVY_LIBRARIES = ("torch", "transformers", "onnxruntime", "fastapi")


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every absolute import in the file at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def is_public_api(module: str) -> bool:
    """What a plugin may import from the core: ``omoide`` itself, ``omoide.api`` and
    ``omoide.testing`` (the contract kit and test doubles)."""
    return (module in ("omoide", "omoide.api") or module.startswith("omoide.api.")
            or module == "omoide.testing" or module.startswith("omoide.testing."))


def is_core(module: str) -> bool:
    return module == "omoide" or module.startswith("omoide.")


def is_plugin(module: str) -> bool:
    """A plugin package: ``omoide_<name>`` (in-tree or anyone's)."""
    return module.split(".")[0].startswith("omoide_")


def test_plugins_import_only_the_public_api() -> None:
    assert PLUGIN_SOURCES, "no plugins/*/src found"
    beyond = [f"{path.relative_to(ROOT)}:{line}: {module}"
              for src in PLUGIN_SOURCES for path in sorted(src.rglob("*.py"))
              for line, module in imported_modules(path)
              if is_core(module) and not is_public_api(module)]
    assert beyond == [], "plugins import the core beyond omoide.api:\n" + "\n".join(beyond)


def test_core_imports_no_plugin() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {module}"
             for path in sorted(CORE.rglob("*.py"))
             for line, module in imported_modules(path) if is_plugin(module)]
    assert found == [], "the core imports plugins:\n" + "\n".join(found)


def test_the_core_does_not_import_the_public_api() -> None:
    # omoide.api imports the core; the core importing it back would close circles.
    found = [f"{path.relative_to(ROOT)}:{line}"
             for path in sorted(CORE.rglob("*.py")) if path != CORE / "api.py"
             for line, module in imported_modules(path)
             if module == "omoide.api" or module.startswith("omoide.api.")]
    assert found == [], "core modules import omoide.api:\n" + "\n".join(found)


def test_importing_the_public_api_loads_no_heavy_library() -> None:
    code = ("import json, sys\n"
            "import omoide.api\n"
            f"print(json.dumps(sorted(set({HEAVY_LIBRARIES!r}) & set(sys.modules))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert json.loads(out.stdout) == []


def test_every_public_name_resolves() -> None:
    import omoide.api

    assert len(omoide.api.__all__) == len(set(omoide.api.__all__)), "a name listed twice"
    missing = [name for name in omoide.api.__all__ if not hasattr(omoide.api, name)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec("from omoide.api import *", namespace)
    assert set(omoide.api.__all__) <= set(namespace)


MEMORY = CORE / "memory"
MEMORY_ROOMS = ("language", "facts", "journal", "index", "recall", "extract", "control")
"""memory/'s rooms, lowest first: a room builds on the rooms before it, never after."""


def memory_room(module: str) -> str | None:
    """The room of ``omoide.memory.<room>...``, None for anything else."""
    parts = module.split(".")
    if parts[:2] == ["omoide", "memory"] and len(parts) > 2 and parts[2] in MEMORY_ROOMS:
        return parts[2]
    return None


def test_memory_rooms_import_only_lower_rooms() -> None:
    upward = []
    for room in MEMORY_ROOMS:
        rank = MEMORY_ROOMS.index(room)
        for path in sorted((MEMORY / room).rglob("*.py")):
            for line, module in imported_modules(path):
                target = memory_room(module)
                if target is not None and MEMORY_ROOMS.index(target) > rank:
                    upward.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert upward == [], "a memory room imports a room above it:\n" + "\n".join(upward)


def test_memory_rooms_do_not_reach_the_engine_that_composes_them() -> None:
    """The engine, the stage views and the plugin module compose the rooms; only
    ``control`` (memory control, above the turn path) may name the engine."""
    composers = ("omoide.memory.engine", "omoide.memory.stage_views",
                 "omoide.memory.plugin", "omoide.memory.stage_loader")
    reaching = [f"{path.relative_to(ROOT)}:{line}: {module}"
                for room in MEMORY_ROOMS if room != "control"
                for path in sorted((MEMORY / room).rglob("*.py"))
                for line, module in imported_modules(path)
                if module in composers]
    assert reaching == [], "a room imports what composes it:\n" + "\n".join(reaching)
