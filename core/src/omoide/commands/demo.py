"""``omoide demo``: a simulated StackChan talks to omoide, offline, on a fresh machine.

It starts the server in this process on ``configs/offline.yaml`` (data in a temporary
folder), pairs a simulated robot the way a real one is paired (OTA -> activation code ->
pairing), and speaks the reference's scenario with Japanese speech synthesised offline:
five exchanges about a new ramen shop, a Hakone trip next Saturday and guitar practice;
then a forced extraction; then five questions that need (or must not use) memory.
For every turn it shows what the recogniser heard (offline: Whisper base, so
mis-hearings are real and marked), the reply with the robot's face, what memory
retrieval found and the time of each stage, then how many lines were heard exactly
and how many recall questions were answered from memory: a question counts only when the
reply carries the fact the script expects for it (箱根 for the weekend plan, on letters
or readings), not when retrieval merely found something. Components that stand in for a
real model are named as such, with the setting that switches to the real one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omoide.components.device import Device
    from omoide.components.simulated_device import SimulatedDeviceClient
    from omoide.server.loopback import LoopbackOmoide

SETUP_LINES = (
    "駅前に新しいラーメン屋ができたから行ってきたよ",
    "みそラーメンを食べたんだけど、すごくおいしかった",
    "また行きたいな",
    "来週の土曜日に友達と箱根に行くんだ",
    "最近、仕事終わりにギターの練習をしてるんだ",
)
RECALL_QUESTIONS = (
    "私の好きなラーメンって何だっけ？",
    "週末の予定覚えてる?",
    "最近私が練習してることって何？",
    "おすすめの映画ある？",
    "日本で一番高い山は？",
)
DEMO_USER = "demo"
DEMO_DEVICE = "stackchan"
"""The device registered under this name plays the robot (its ``simulated_client``)."""
STAGE_LABELS = (("asr", "asr"), ("retrieve", "retrieve"), ("chat_first_token", "first token"),
                ("first_sentence_audio", "first audio"), ("done", "done"))


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="a simulated StackChan talks to omoide (offline, no keys)")
    p.add_argument("--config", default=None,
                   help="config to run (default: configs/offline.yaml of this checkout)")
    p.add_argument("--data-dir", default=None,
                   help="keep the server's data here (default: a temporary folder)")
    p.add_argument("--out", default=None, help="save the robot's reply audio (WAV) here")
    p.add_argument("--fast", action="store_true",
                   help="send the user's speech 4x faster than real time")
    p.set_defaults(handler=_demo)


def default_config() -> Path:
    here = Path("configs/offline.yaml")
    if here.exists():
        return here
    import omoide
    return Path(omoide.__file__).resolve().parents[3] / "configs" / "offline.yaml"


EXPECTED_FACTS: dict[str, str] = {
    RECALL_QUESTIONS[0]: "みそ",
    RECALL_QUESTIONS[1]: "箱根",
    RECALL_QUESTIONS[2]: "ギター",
}
"""For each question whose answer is in the user's memories, what the reply must say."""
MEMORY_QUESTIONS = tuple(EXPECTED_FACTS)
"""The questions whose answer is in the user's memories (the other two need none)."""


def prepare_config(path: Path, data_dir: Path) -> dict[str, Any]:
    """The config with its data moved to ``data_dir``."""
    import yaml

    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    data.setdefault("server", {})["data_dir"] = str(data_dir)
    store = data.get("store")
    if isinstance(store, dict) and "path" in store:
        store["path"] = str(data_dir / "store")
    return data


def mishearings(said: str, heard: str) -> list[tuple[str, str]]:
    """Where ``heard`` differs from ``said``, as (said, heard) pieces; punctuation, width
    and spaces are not counted (NFKC, then compared without them)."""
    import difflib

    a, b = _letters(said), _letters(heard)
    return [(a[i1:i2], b[j1:j2]) for op, i1, i2, j1, j2 in
            difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op != "equal"]


def _letters(text: str) -> str:
    import unicodedata

    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if unicodedata.category(c)[0] not in "PZS")


def reply_carries(reply: str, expected: str) -> bool:
    """Whether ``reply`` says ``expected``: in its letters (NFKC, punctuation and spaces
    aside, hiragana as katakana) or in its reading, so 味噌 and みそ, 箱根 and はこね are
    the same fact."""
    from omoide.memory.language.canonical import to_katakana
    from omoide.memory.language.lexicon import analyzer

    wanted = to_katakana(_letters(expected))
    if not wanted:
        return False
    if wanted in to_katakana(_letters(reply)):
        return True
    reader = analyzer()
    reading = reader.reading_of(expected)
    return bool(reading) and reading in reader.reading_of(reply)


@dataclass
class DemoTally:
    """What the demo counts as it goes, for its closing lines."""

    heard_exactly: int = 0
    lines: int = 0
    recalled: int = 0
    """Memory questions whose reply carries the expected fact."""
    retrieved: int = 0
    """Memory questions for which retrieval found at least one memory."""
    from_conversation: int = 0
    """Memory questions answered with the fact from this conversation, not from memory."""
    memory_questions: int = 0


def real_choices(config_path: Path) -> dict[str, str]:
    """``use:`` of each stage in the production config next to ``config_path``."""
    import yaml

    default = config_path.parent / "default.yaml"
    if not default.exists():
        return {}
    data = yaml.safe_load(default.read_text(encoding="utf-8")) or {}
    return {k: v["use"] for k, v in data.items() if isinstance(v, dict) and "use" in v}


def synthesise_user_speech(text: str) -> Any:
    """The user's line as 16 kHz speech, synthesised offline with Open JTalk."""
    import numpy as np

    from omoide.audio import resample
    from omoide.types import AudioClip

    try:
        import pyopenjtalk
    except ImportError:
        raise SystemExit("the demo synthesises the user's speech with pyopenjtalk: "
                         "pip install pyopenjtalk-plus") from None
    wave, rate = pyopenjtalk.tts(text)
    clip = AudioClip((np.asarray(wave) / 32768.0).astype(np.float32), int(rate))
    clip = resample(clip, 16000)
    pad = np.zeros(int(0.3 * 16000), dtype=np.float32)
    return AudioClip(np.concatenate([pad, clip.samples, pad]), 16000)


class TurnObserver:
    """Collects completed turns (trace, memories) through the ``on_turn_completed`` hook."""

    def __init__(self) -> None:
        self.turns: list[Any] = []


def turn_observer() -> TurnObserver:
    """A :class:`TurnObserver` ready to register with the plugin manager."""
    from omoide.hookspecs import hookimpl

    class Observer(TurnObserver):
        @hookimpl
        def on_turn_completed(self, turn: Any) -> None:
            self.turns.append(turn)

    return Observer()


def _ms(trace: Any, stage: str) -> str:
    value = trace.ms(stage)
    return "-" if value is None else f"{value:.0f}"


def _print(*lines: str) -> None:
    for line in lines:
        print(line, flush=True)


async def _run(args: argparse.Namespace) -> int:
    import logging

    device_cls = demo_device_class()
    if device_cls is None:
        _print("the demo needs the StackChan plugin: pip install -e plugins/device_stackchan")
        return 1
    logging.getLogger("omoide").setLevel(logging.WARNING)
    config_path = Path(args.config) if args.config else default_config()
    if not config_path.exists():
        _print(f"no config at {config_path}; pass --config FILE")
        return 2
    with _data_folder(args.data_dir) as data_dir:
        out = Path(args.out) if args.out else None
        if out:
            out.mkdir(parents=True, exist_ok=True)
        _print("omoide demo: a simulated StackChan talks to omoide, offline.",
               f"config {config_path}, data in {data_dir}", "")
        return await _serve_and_talk(args, device_cls, config_path, data_dir, out)


def demo_device_class() -> type[Device] | None:
    """The device class an installed plugin registers as ``stackchan`` (the demo's robot),
    or None when none does."""
    from omoide.plugins import PluginRegistry

    registry = PluginRegistry()
    registry.discover()
    registry.load_for([("device", DEMO_DEVICE)])
    from omoide.components.device import Device

    device_cls = registry.components["device"].get(DEMO_DEVICE)
    return device_cls if device_cls is not None and issubclass(device_cls, Device) else None


@contextlib.contextmanager
def _data_folder(given: str | None) -> Iterator[Path]:
    """``given`` (made absolute), or a temporary folder removed at the end."""
    if given:
        yield Path(given).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="omoide-demo-") as tmp:
        yield Path(tmp)


async def _serve_and_talk(args: argparse.Namespace, device_cls: type[Device],
                          config_path: Path, data_dir: Path, out: Path | None) -> int:
    """Start the server on the demo's config, run the scenario against it, stop it."""
    from omoide.errors import ConfigError
    from omoide.server.loopback import LoopbackOmoide, StartFailed, settings_from_data

    try:
        settings = settings_from_data(prepare_config(config_path, data_dir),
                                      str(config_path))
    except ConfigError as exc:
        _print(str(exc))
        return 2
    server = LoopbackOmoide(settings, log_level="error")
    _print("starting the server (loading models)...")
    try:
        await server.start(ready_timeout_s=600)
    except StartFailed as exc:
        _print(f"the server did not start: {exc}")
        await server.stop()
        return 1
    try:
        return await _talk(args, server, device_cls, config_path, out)
    finally:
        await server.stop()


async def _talk(args: argparse.Namespace, server: LoopbackOmoide, device_cls: type[Device],
                config_path: Path, out: Path | None) -> int:
    """Pair a simulated robot, run the three parts, and tell how it went."""
    import httpx

    from omoide.server.tokens import TokenStore

    observer = turn_observer()
    server.omoide.registry.pm.register(observer, name="demo.observer")
    admin = {"Authorization": f"Bearer {TokenStore(server.settings.data_dir).admin_token()}"}
    async with httpx.AsyncClient(base_url=server.url, timeout=120, headers=admin) as http:
        health = (await http.get("/healthz")).json()
        _show_components(health, real_choices(config_path))
        robot = device_cls.simulated_client(server.url, management_headers=admin,
                                            speed=4.0 if args.fast else 1.0)
        if robot is None:
            _print(f"the {DEMO_DEVICE} device offers no simulated robot")
            return 1
        _print(*await robot.provision(DEMO_USER))
        await robot.connect()
        _print(f"robot connected over WebSocket (session {robot.session_id}); "
               f"user {DEMO_USER!r}", "")
        tally = DemoTally()
        turn = functools.partial(_turn, robot=robot, observer=observer, out=out, tally=tally)
        await _scenario(http, server, robot, observer, turn)
        await robot.close()
        _show_tally(tally)
        _show_stand_ins(health, real_choices(config_path))
    return 0


async def _scenario(http: Any, server: LoopbackOmoide, robot: SimulatedDeviceClient,
                    observer: TurnObserver, turn: Callable[..., Awaitable[None]]) -> None:
    """The three parts: what the user tells, a forced extraction and questions, skills."""
    from omoide.commands.demo_skills import run_skills_part

    _print("== part 1: five things the user tells the robot ==")
    for i, line in enumerate(SETUP_LINES, 1):
        await turn(i, line, show_memories=False)

    _print("", "== forced extraction (POST /v1/memory/extract) ==")
    await _extract(http, server)

    _print("", "== part 2: questions (recall, and two that need no memory) ==")
    for i, line in enumerate(RECALL_QUESTIONS, len(SETUP_LINES) + 1):
        await turn(i, line, show_memories=True)

    # part 3: skills (tools); all of it lives in commands/demo_skills.py
    await run_skills_part(server, robot, observer, turn,
                          len(SETUP_LINES) + len(RECALL_QUESTIONS) + 1, DEMO_USER)


def _show_components(health: dict[str, Any], real: dict[str, str]) -> None:
    _print("components:")
    for path, comp in health["components"].items():
        label = f"  {path:<11} {comp['name']:<11} {comp['state']}"
        if comp.get("stand_in"):
            label += "  STAND-IN"
        _print(label)
    _print("")


def _show_stand_ins(health: dict[str, Any], real: dict[str, str]) -> None:
    stand_ins = {p: c for p, c in health["components"].items() if c.get("stand_in")}
    if not stand_ins:
        return
    _print("", "== what stood in for a real model in this run ==")
    for path, comp in stand_ins.items():
        _print(f"  {path} ({comp['name']}): {comp['stand_in']}")
        if path in real and real[path] != comp["name"]:
            _print(f"    the real one: `{path}: {{use: {real[path]}, ...}}` as in "
                   "configs/default.yaml (omoide serve --config configs/default.yaml)")


async def _turn(index: int, line: str, *, robot: SimulatedDeviceClient,
                observer: TurnObserver, out: Path | None, tally: DemoTally,
                show_memories: bool) -> None:
    clip = await asyncio.to_thread(synthesise_user_speech, line)
    seen = len(observer.turns)
    reply = await robot.say(clip, timeout=180)
    for _ in range(100):                       # the hook fires as the turn is journaled
        if len(observer.turns) > seen:
            break
        await asyncio.sleep(0.02)
    turn = observer.turns[seen] if len(observer.turns) > seen else None
    heard = reply.transcript or ""
    _print(f"[{index:>2}] user : {line}",
           f"     heard: {heard or '(nothing: the recogniser did not understand)'}"
           + _context_note(turn))
    wrong = mishearings(line, heard) if heard else []
    tally.lines += 1
    tally.heard_exactly += not wrong and bool(heard)
    if wrong:
        _print("     misheard: " + ", ".join(f"{a or '∅'}→{b or '∅'}" for a, b in wrong))
    if show_memories and turn is not None:
        if turn.memories:
            for m in turn.memories:
                _print(f"     recalled ({m.score:.2f}): {m.memory.text}")
        else:
            _print("     recalled: nothing")
    face = reply.face or "neutral"
    _print(f"     robot {robot.face_emoji(face)} [{face}]: {reply.text}")
    if line in EXPECTED_FACTS:
        count_memory_answer(tally, EXPECTED_FACTS[line], reply.text or "", turn)
    if reply.errors:
        _print(f"     errors: {'; '.join(reply.errors)}")
    if turn is not None:
        trace = turn.trace
        times = " · ".join(f"{label} {_ms(trace, stage)}" for stage, label in STAGE_LABELS)
        _print(f"     ms after end of speech: {times}")
    if out is not None:
        reply.save_wav(out / f"reply-{index:02d}.wav")


def count_memory_answer(tally: DemoTally, expected: str, reply: str, turn: Any) -> None:
    """Count a memory question as answered from memory only when its reply carries the
    fact and the memories or profile the prompt carried hold it (a fact said earlier in
    this conversation and not recalled is counted apart)."""
    memories = [m.memory.text for m in turn.memories] if turn is not None else []
    profile = [f.memory.text for f in turn.profile] if turn is not None else []
    carried = reply_carries(reply, expected)
    in_memory = any(reply_carries(text, expected) for text in memories + profile)
    tally.memory_questions += 1
    tally.retrieved += bool(memories)
    tally.recalled += carried and in_memory
    tally.from_conversation += carried and not in_memory
    if not carried:
        verdict = "NOT in the reply: not answered from memory"
    elif in_memory:
        verdict = "in the reply, and in the recalled memories or profile"
    else:
        verdict = ("in the reply, but no recalled memory holds it: answered from this"
                   " conversation, not from memory")
    _print(f"     expected from memory: {expected} ({verdict})")


def _context_note(turn: Any) -> str:
    """" (with N memory words as context)" when the recogniser was given the vocabulary."""
    span = turn.trace.spans.get("asr") if turn is not None else None
    note = getattr(span, "note", None)
    return f"   ({note.replace(' as context', '')} as recognition context)" if note else ""


def _show_tally(tally: DemoTally) -> None:
    _print("", "== how it went ==",
           f"  heard exactly: {tally.heard_exactly} of {tally.lines} lines (punctuation aside);"
           " the others are shown with what was misheard",
           f"  recall questions answered from memory: {tally.recalled} of"
           f" {tally.memory_questions} (counted when the reply carries the expected fact:"
           f" {', '.join(EXPECTED_FACTS.values())}, and a recalled memory or the profile"
           f" holds it); answered from this conversation only: {tally.from_conversation};"
           f" retrieval found memories for {tally.retrieved} of {tally.memory_questions}")


async def _extract(http: Any, server: Any) -> None:
    response = await http.post("/v1/memory/extract", json={"user": DEMO_USER})
    if response.status_code == 404:   # the HTTP route is not mounted: ask the engine itself
        report = await server.omoide.memory.extract_now(DEMO_USER)
        error = report.error
    else:
        body = response.json() if response.content else {}
        error = body.get("error") if response.status_code >= 400 or body.get("error") else None
    if error:
        _print(f"  extraction failed: {error}")
    memories = await server.omoide.memory.list_memories(DEMO_USER)
    _print(f"  {len(memories)} memories stored for {DEMO_USER!r}:")
    for m in memories:
        dates = f"  (dates: {', '.join(d.isoformat() for d in m.event_dates)})" \
            if m.event_dates else ""
        _print(f"   - {m.text}{dates}")


def _demo(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
