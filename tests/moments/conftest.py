"""Moments' tests: the simulated fortnight lives in ``moments_fortnight``."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
async def standin_chat() -> AsyncIterator[object]:
    """The offline stand-in chat model, started (its rule per moment kind writes lines)."""
    from omoide_standins.chat import StandinChat, StandinChatConfig
    chat = StandinChat(StandinChatConfig(entities=False))
    await chat.start()
    yield chat
    await chat.stop()
