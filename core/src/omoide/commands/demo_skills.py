"""The skills part of ``omoide demo``: a timer that goes off on the robot, and a memory
forgotten by voice after a yes. Kept apart from the rest of the scenario.

It needs the ``clock``, ``timers`` and ``memory`` tools in the config (configs/offline.yaml
lists them); without them the part is skipped with a note.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omoide.components.simulated_device import SimulatedDeviceClient

TIMER_LINE = "タイマーを10秒でセットして"
"""Said in full: Whisper base hears the bare 「10秒タイマー」 as nothing even with the
timers tool's phrases as context, and this sentence right with them (measured)."""
FORGET_LINES = ("箱根のことは忘れて", "うん、お願い")
SKILL_LINES = (TIMER_LINE, *FORGET_LINES)
"""What the user says in this part."""
NEEDED_TOOLS = {"timers", "memory"}

TurnFn = Callable[..., Awaitable[None]]


def _print(*lines: str) -> None:
    for line in lines:
        print(line, flush=True)


def _tool_calls(observer: Any) -> str:
    turn = observer.turns[-1] if observer.turns else None
    calls = getattr(getattr(turn, "trace", None), "tools", []) if turn else []
    return ", ".join(f"{c['name']} → {c['outcome']} ({c['duration_ms']:.0f} ms)"
                     for c in calls) or "none"


async def run_skills_part(server: Any, robot: SimulatedDeviceClient, observer: Any,
                          turn: TurnFn, first_index: int, user: str, *,
                          timer_line: str = TIMER_LINE) -> None:
    """Part 3 of the demo. ``turn(index, line, ...)`` is the demo's own turn printer."""
    tools = {t.name for t in server.omoide.runtime.tools}
    _print("", "== part 3: skills — a timer, and forgetting by voice (tool calls) ==")
    if not tools >= NEEDED_TOOLS:
        _print(f"  skipped: the config lists no {', '.join(sorted(NEEDED_TOOLS - tools))} "
               "tool (see `tools:` in configs/offline.yaml)")
        return
    index = first_index
    await turn(index, timer_line, show_memories=False)
    _print(f"     tool calls: {_tool_calls(observer)}")
    try:
        said = await robot.hear_unprompted(timeout=60)
        _print(f"     ... when it is up, unprompted, the robot says: {''.join(said)}")
    except (TimeoutError, ConnectionError) as exc:
        _print(f"     the timer did not go off on the robot: {exc}")
    memory = server.omoide.memory
    before = {m.id: m.text for m in await memory.list_memories(user)}
    for line in FORGET_LINES:
        index += 1
        await turn(index, line, show_memories=False)
        _print(f"     tool calls: {_tool_calls(observer)}")
    after = {m.id: m.text for m in await memory.list_memories(user)}
    for text in (before[i] for i in before if i not in after):
        _print(f"  forgotten after the yes: {text}")
    for text in (after[i] for i in after if i not in before):
        _print(f"  (extracted meanwhile from this conversation: {text})")
