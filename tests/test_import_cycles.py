"""No import circles among omoide's modules (core and in-tree plugins), lazy imports included.

``tools/house/import_cycles.py`` draws the graph; these tests pin down what counts as an
edge, then run it on the tree.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools/house/import_cycles.py"


def _circles(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the script on a made-up core package ``pkg`` holding ``files``."""
    for name, text in files.items():
        path = tmp_path / "core/src/pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    (tmp_path / "core/src/pkg/__init__.py").touch()
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)


def test_a_function_level_import_closes_a_circle(tmp_path: Path) -> None:
    out = _circles(tmp_path, {"a.py": "import pkg.b\n",
                              "b.py": "def f():\n    from pkg import a\n"})
    assert out.returncode == 1
    assert "pkg.a <-> pkg.b" in out.stdout


def test_an_import_only_for_type_checking_does_not(tmp_path: Path) -> None:
    out = _circles(tmp_path, {"a.py": "from pkg.b import B\n",
                              "b.py": "from typing import TYPE_CHECKING\n"
                                      "if TYPE_CHECKING:\n    from pkg.a import A\n"})
    assert out.returncode == 0, out.stdout


def test_importing_a_submodule_by_name_from_its_package_counts(tmp_path: Path) -> None:
    out = _circles(tmp_path, {"sub/__init__.py": "",
                              "sub/x.py": "from .. import y\n",
                              "y.py": "from pkg.sub import x\n"})
    assert out.returncode == 1
    assert "pkg.sub.x <-> pkg.y" in out.stdout


def test_a_package_init_that_imports_a_module_importing_it_back_counts(tmp_path: Path) -> None:
    out = _circles(tmp_path, {"sub/__init__.py": "from pkg.sub.x import X\n",
                              "sub/x.py": "from pkg.sub import HELPER\n"})
    assert out.returncode == 1
    assert "pkg.sub <-> pkg.sub.x" in out.stdout


def test_the_core_and_the_plugins_have_no_import_circle() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), str(ROOT)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout
