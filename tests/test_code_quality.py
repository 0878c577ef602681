"""The house rules that tools can check: ruff on everything, mypy --strict on the core."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (./dev.sh test installs it)")
    return found


def test_ruff_finds_nothing() -> None:
    out = subprocess.run([_tool("ruff"), "check", "core", "plugins", "tools", "tests"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:]


def test_the_core_type_checks_strictly() -> None:
    out = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stdout[-4000:]
