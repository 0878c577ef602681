"""Moments' tests (the simulated fortnight is ``omoide bench moments``'s,
:mod:`omoide_bench.benches.moments`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest


@pytest.fixture
async def standin_chat() -> AsyncIterator[object]:
    """The offline stand-in chat model, started (its rule per moment kind writes lines)."""
    from omoide_standins.chat import StandinChat, StandinChatConfig
    chat = StandinChat(StandinChatConfig(entities=False))
    await chat.start()
    yield chat
    await chat.stop()
