"""``omoide bench openai``: what the OpenAI-compatible endpoint adds to a turn.

A real server (the app under uvicorn on 127.0.0.1, the guard, the pipeline, the memory
engine; test-double ASR, embedder, store, TTS and a chat model of fixed latency) answers
the same text as ``POST /v1/turns`` and as ``POST /v1/chat/completions``, alternately, as
one person with their own token, over one kept-alive connection:

- **overhead**: the completion's wall time minus the turn's (p50 and p95 of each, and
  their difference): parsing the message list, building the conversation, the OpenAI
  shapes;
- **first streamed token**: with ``stream: true``, the time to the first content chunk
  the client reads minus the turn's own first token as its trace records it (from the
  turn's start): everything the endpoint adds before the first token reaches the client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from omoide_bench.benches._stats import percentiles

REPLY = "うん、それはいいね！今日はとても楽しかったよ。また明日も一緒に遊ぼうね。"
"""No face tag: a chat client's turn does not ask for one (``/v1/turns`` does, but the
chat double answers the same either way)."""
TEXT = "今日はどうだった？"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("openai", help="the OpenAI-compatible endpoint's overhead over a turn")
    p.add_argument("--turns", type=int, default=100, help="requests of each kind")
    p.add_argument("--first-token-ms", type=float, default=20)
    p.add_argument("--token-ms", type=float, default=2)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_run)


def _settings(data_dir: Path, args: argparse.Namespace) -> Any:
    from omoide.server.loopback import settings_from_data

    return settings_from_data({
        "server": {"data_dir": str(data_dir), "limits": {"new_users_per_source": 0}},
        # no extraction during the measure: the chat double answers it with no facts
        "memory": {"extraction": {"max_exchanges": 1_000_000, "idle_minutes": 1440,
                                  "on_disconnect": False}},
        "asr": {"use": "fake"}, "embed": {"use": "fake"}, "store": {"use": "fake"},
        "chat": {"use": "fake", "reply": REPLY, "first_token_ms": args.first_token_ms,
                 "per_token_ms": args.token_ms},
        "tts": {"use": "fake"}}, source="<bench openai>")


async def _timed_turn(http: Any) -> tuple[float, float]:
    """The turn's wall time, and the part before it started (as for a stream below)."""
    from datetime import datetime

    sent_at = time.time()
    t0 = time.perf_counter()
    r = await http.post("/v1/turns", json={"user": "bench", "text": TEXT})
    elapsed = (time.perf_counter() - t0) * 1000
    assert r.status_code == 200, r.text
    started = datetime.fromisoformat(r.json()["trace"]["started_at"]).timestamp()
    return elapsed, (started - sent_at) * 1000


async def _timed_completion(http: Any) -> float:
    t0 = time.perf_counter()
    r = await http.post("/v1/chat/completions", json={
        "model": "omoide", "messages": [{"role": "user", "content": TEXT}]})
    elapsed = (time.perf_counter() - t0) * 1000
    assert r.status_code == 200, r.text
    return elapsed


async def _first_chunk_over_first_token(http: Any) -> tuple[float, float]:
    """Client's first content chunk (ms after sending) minus the turn's first token (ms
    after the turn started, from its trace); and of that, the part before the turn
    started (request, guard, parsing: wall clocks of client and server, one machine)."""
    from datetime import datetime

    sent_at = time.time()
    t0 = time.perf_counter()
    first: float | None = None
    turn_id = None
    async with http.stream("POST", "/v1/chat/completions", json={
            "model": "omoide", "stream": True,
            "messages": [{"role": "user", "content": TEXT}]}) as r:
        assert r.status_code == 200
        async for line in r.aiter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line.removeprefix("data: "))
            if first is None and chunk["choices"] and chunk["choices"][0]["delta"].get(
                    "content"):
                first = (time.perf_counter() - t0) * 1000
            if "omoide" in chunk:
                turn_id = chunk["omoide"]["turn_id"]
    assert first is not None and turn_id is not None
    traces = (await http.get("/v1/traces", params={"user": "bench", "limit": 5})).json()
    [trace] = [t for t in traces["traces"] if t["turn_id"] == turn_id]
    before_turn = (datetime.fromisoformat(trace["started_at"]).timestamp() - sent_at) * 1000
    return first - float(trace["stages"]["chat_first_token"]["start_ms"]), before_turn


async def _bench(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    from omoide.server.loopback import LoopbackOmoide
    from omoide.server.tokens import TokenStore

    with tempfile.TemporaryDirectory() as tmp:
        settings = _settings(Path(tmp) / "data", args)
        server = LoopbackOmoide(settings)
        await server.start(ready_timeout_s=120)
        try:
            token, _ = TokenStore(settings.data_dir).create_person_token("bench")
            async with httpx.AsyncClient(base_url=server.url, timeout=60, headers={
                    "Authorization": f"Bearer {token}"}) as http:
                for _ in range(5):                       # warm every path
                    await _timed_turn(http)
                    await _timed_completion(http)
                turns, completions, streamed, before, turn_before = [], [], [], [], []
                for _ in range(args.turns):
                    took, waited = await _timed_turn(http)
                    turns.append(took)
                    turn_before.append(waited)
                    completions.append(await _timed_completion(http))
                    added, before_turn = await _first_chunk_over_first_token(http)
                    streamed.append(added)
                    before.append(before_turn)
        finally:
            await server.stop()
    t, c = percentiles(turns), percentiles(completions)
    return {"turns": args.turns, "chat_first_token_ms": args.first_token_ms,
            "chat_token_ms": args.token_ms, "load_average": list(os.getloadavg()),
            "v1_turns_ms": t, "chat_completions_ms": c,
            "overhead_ms": {"p50": round(c["p50"] - t["p50"], 2),
                            "p95": round(c["p95"] - t["p95"], 2)},
            "first_streamed_token_after_turn_first_token_ms": percentiles(streamed),
            "of_which_before_the_turn_started_ms": percentiles(before),
            "v1_turns_before_the_turn_started_ms": percentiles(turn_before)}


def _run(args: argparse.Namespace) -> int:
    result = asyncio.run(_bench(args))
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    load = ", ".join(f"{x:.2f}" for x in result["load_average"])
    print(f"openai endpoint bench: {result['turns']} requests of each kind "
          f"(chat: first token {result['chat_first_token_ms']:g} ms, "
          f"{result['chat_token_ms']:g} ms per token); load average {load}")
    for key in ("v1_turns_ms", "chat_completions_ms"):
        s = result[key]
        print(f"  {key:46s} p50 {s['p50']:8.2f}  p95 {s['p95']:8.2f}  max {s['max']:8.2f}")
    o = result["overhead_ms"]
    print(f"  {'overhead (completions - turns)':46s} p50 {o['p50']:8.2f}  p95 {o['p95']:8.2f}")
    s = result["first_streamed_token_after_turn_first_token_ms"]
    print(f"  {'first streamed token - turn first token':46s} p50 {s['p50']:8.2f}  "
          f"p95 {s['p95']:8.2f}  max {s['max']:8.2f}")
    for key, label in (("of_which_before_the_turn_started_ms",
                        "  of which before the turn started"),
                       ("v1_turns_before_the_turn_started_ms",
                        "  (POST /v1/turns: before its turn started)")):
        s = result[key]
        print(f"  {label:46s} p50 {s['p50']:8.2f}  p95 {s['p95']:8.2f}  max {s['max']:8.2f}")
    return 0
