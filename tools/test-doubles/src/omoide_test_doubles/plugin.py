"""The ``testing`` plugin: registers the test doubles of :mod:`omoide.testing.doubles`.

It goes through the same entry point group as any third-party plugin, so the core's
own tests exercise the public plugin path. It ships in the omoide-test-doubles
distribution, which only test and benchmark set-ups install.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_vad(register: Callable[[Any], None]) -> None:
    from omoide.testing.doubles import FakeVAD
    register(FakeVAD)


@hookimpl
def register_asr(register: Callable[[Any], None]) -> None:
    from omoide.testing.doubles import FakeASR
    register(FakeASR)


@hookimpl
def register_embedders(register: Callable[[Any], None]) -> None:
    from omoide.testing.doubles import HashEmbedder
    register(HashEmbedder)


@hookimpl
def register_stores(register: Callable[[Any], None]) -> None:
    from omoide.testing.doubles import InMemoryStore
    register(InMemoryStore)


@hookimpl
def register_chat_models(register: Callable[[Any], None]) -> None:
    from omoide.testing.doubles import FakeChat
    register(FakeChat)


@hookimpl
def register_tts(register: Callable[[Any], None]) -> None:
    from omoide.testing.doubles import FakeTTS
    register(FakeTTS)


@hookimpl
def register_tools(register: Callable[[Any], None]) -> None:
    from omoide.testing.doubles import ToolDouble
    register(ToolDouble)
