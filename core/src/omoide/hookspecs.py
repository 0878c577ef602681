"""The hooks a plugin may implement.

Registration hooks register component *classes* (config is validated before anything
heavy is built); the YAML picks one registered name per stage with ``use:``.
``prompt_sections`` is a broadcast: every plugin may contribute; the core sorts the
sections by ``order``, never by hook call order. ``on_turn_completed`` is an observer.

A plugin module marks its functions with :data:`hookimpl` (plugins take it, and all
else they use, from :mod:`omoide.api`)::

    from omoide.api import hookimpl

    @hookimpl
    def register_tts(register):
        register(MyTTS)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from omoide.components import (
        ASR,
        TTS,
        VAD,
        ChatModel,
        Device,
        Embedder,
        Extractor,
        RecallEngine,
        SpeakerEncoder,
        Tool,
        TurnDetector,
        VectorStore,
    )
    from omoide.components.prompt import PromptContext, PromptSection
    from omoide.pipeline.turn import CompletedTurn

PROJECT = "omoide"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_vad(register: Callable[[type[VAD]], None]) -> None:
    """Register voice activity detector classes."""


@hookspec
def register_turn_detectors(register: Callable[[type[TurnDetector]], None]) -> None:
    """Register end-of-turn detector classes (finished or pausing?); a config picks one
    with ``turn: {use: NAME}``. See :mod:`omoide.components.turn`."""


@hookspec
def register_speaker_encoders(register: Callable[[type[SpeakerEncoder]], None]) -> None:
    """Register speaker encoder classes (voiceprints: who is speaking?); a config picks
    one with ``speaker: {use: NAME}``. See :mod:`omoide.components.speaker`."""


@hookspec
def register_asr(register: Callable[[type[ASR]], None]) -> None:
    """Register speech recognition classes."""


@hookspec
def register_embedders(register: Callable[[type[Embedder]], None]) -> None:
    """Register text embedder classes."""


@hookspec
def register_stores(register: Callable[[type[VectorStore]], None]) -> None:
    """Register vector store classes."""


@hookspec
def register_chat_models(register: Callable[[type[ChatModel]], None]) -> None:
    """Register chat model classes."""


@hookspec
def register_tts(register: Callable[[type[TTS]], None]) -> None:
    """Register text-to-speech classes."""


@hookspec
def register_devices(register: Callable[[type[Device]], None]) -> None:
    """Register device (transport) classes."""


@hookspec
def register_tools(register: Callable[[type[Tool]], None]) -> None:
    """Register tool (skill) classes: what the chat model may call during a turn.

    A config enables one by listing it under ``tools:`` (``- {use: NAME, ...}``);
    see :mod:`omoide.components.tool`.
    """


@hookspec
def register_memory_engines(register: Callable[[type[RecallEngine]], None]) -> None:
    """Register memory engine classes: the read path, what a turn recalls.

    A config picks one with ``memory: {retrieve: {use: NAME, ...}}``; omoide's own
    ``baseline`` and ``robust`` register through this hook too. See
    :mod:`omoide.components.memory_engine`.
    """


@hookspec
def register_extractors(register: Callable[[type[Extractor]], None]) -> None:
    """Register extractor classes: exchanges in, facts about the person out.

    A config picks one with ``memory: {extract: {use: NAME, ...}}``; omoide's own
    ``chat`` registers through this hook too. See :mod:`omoide.components.extractor`.
    """


@hookspec
def prompt_sections(context: PromptContext) -> list[PromptSection] | None:
    """Contribute sections to the system prompt of one turn (persona, dates, memories...).

    Return None or a list; the core orders all sections by ``PromptSection.order``.
    Must be fast and must not do I/O: everything needed is in ``context``.
    """


@hookspec
def on_turn_completed(turn: CompletedTurn) -> None:
    """Observe a finished turn (already journaled). Must return quickly: schedule work,
    don't do it here."""


@hookspec
def register_commands(cli: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add subcommands to the ``omoide`` command line.

    ``cli`` is the top-level subparsers object: add a parser with
    ``cli.add_parser(NAME, help=...)`` and give it ``set_defaults(handler=fn)`` where
    ``fn(args) -> int`` is the exit status. Keep the hook cheap (no heavy imports: it runs
    for ``omoide --help``); import what the command needs inside the handler.

    Only plugins that declare a command are loaded for the command line: list each one
    under ``[project.entry-points."omoide.components"]`` as ``"command.NAME" = "PLUGIN"``.
    """
