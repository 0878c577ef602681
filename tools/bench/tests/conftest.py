"""Fixtures for omoide-bench's tests: the ``omoide`` command run as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
"""The omoide checkout: benches default to ``configs/offline.yaml`` relative to it."""


def _run_omoide(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "omoide.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})},
                          cwd=cwd or ROOT)


@pytest.fixture
def omoide_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the ``omoide`` CLI in a subprocess from the checkout: ``omoide_cli("bench", ...)``."""
    return _run_omoide
