"""Fixtures for the StackChan plugin tests (helpers live in omoide_device_stackchan.testing)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from omoide.testing.doubles import FakeVAD
from omoide_device_stackchan.testing import LiveServer, start_server


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[LiveServer]:
    """An open-mode server (no pairing needed; tokens still required)."""
    srv = await start_server(tmp_path, FakeVAD(FakeVAD.Config(min_silence_ms=300)),
                             pairing_required=False)
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
async def paired_server(tmp_path: Path) -> AsyncIterator[LiveServer]:
    """A server that only serves paired devices."""
    srv = await start_server(tmp_path, FakeVAD(FakeVAD.Config(min_silence_ms=300)))
    try:
        yield srv
    finally:
        await srv.stop()
