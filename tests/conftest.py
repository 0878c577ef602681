"""Whole-system tests: the installed core and plugins together, through the CLI and HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"


def _run_omoide(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "omoide.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=full_env, cwd=cwd or ROOT)


@pytest.fixture
def omoide_cli():  # type: ignore[no-untyped-def]
    """Run the ``omoide`` CLI in a subprocess, as a user would: ``omoide_cli("plugins")``."""
    return _run_omoide


@pytest.fixture(scope="session")
def configs() -> Path:
    """The shipped ``configs/`` folder."""
    return CONFIGS


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def no_secrets() -> dict[str, str]:
    """An environment without the production keys."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MODELSCOPE")}
