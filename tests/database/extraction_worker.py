"""One extraction worker for the kill test (run as a script, killed with SIGKILL).

    python extraction_worker.py DATABASE_URL CHROMA_PORT DATA_DIR USER...

A memory engine on the shared PostgreSQL journal and Chroma server, over the hash
embedder and a chat double that answers one fact per user line after a short pause
(so kills land while it is asked, while batches are open, while the store is
written); what it answered is appended to ``DATA_DIR/asked.txt``.
It extracts the users' exchanges until none are left for it, printing ``working`` once
started and ``done`` at the end.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from omoide.components import ChatConfig, ChatModel
from omoide.config_schema import DatabaseSettings
from omoide.memory.config import MemoryConfig
from omoide.memory.engine import MemoryEngine
from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig
from omoide.types import ChatDelta, ChatMessage, ToolSpec
from omoide_store_chroma.config import ChromaStoreConfig
from omoide_store_chroma.store import ChromaStore

LINE = re.compile(r"^\[[^\]]*\] user: (.*)$", re.M)
LEASE_SECONDS = 1.0


class SlowLineFactsChat(ChatModel):
    """One fact 「あなたは<line>。」 per user line, after 0.3-1 s; each line it answered
    is appended to ``asked`` (so the test counts what was asked more than once)."""

    name = "slow-line-facts"
    Config = ChatConfig
    asked: Path

    async def _stream(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                      json_output: bool) -> AsyncIterator[ChatDelta]:
        await asyncio.sleep(random.uniform(0.3, 1.0))
        lines = LINE.findall(messages[-1].content)
        with self.asked.open("a", encoding="utf-8") as f:
            f.writelines(f"{line}\n" for line in lines)
        facts = [{"text": f"あなたは{line.rstrip('。')}。", "kind": "other"} for line in lines]
        yield ChatDelta(text=json.dumps({"facts": facts}, ensure_ascii=False))


async def work(url: str, port: int, data_dir: Path, users: list[str]) -> None:
    store = ChromaStore(ChromaStoreConfig(host="127.0.0.1", port=port))
    embedder = HashEmbedder(HashEmbedderConfig(dims=64))
    chat = SlowLineFactsChat(ChatConfig(retries=0))
    data_dir.mkdir(parents=True, exist_ok=True)
    chat.asked = data_dir / "asked.txt"
    for component in (store, embedder, chat):
        await component.start()
    engine = MemoryEngine(MemoryConfig(time_budget_ms=10_000.0), embedder=embedder,
                          store=store, chat=chat, data_dir=data_dir, timezone="Asia/Tokyo",
                          database=DatabaseSettings(url=url, pool_size=2,
                                                    lease_seconds=LEASE_SECONDS))
    await engine.start()
    print("working", flush=True)
    while True:
        random.shuffle(users)
        reports = [await engine.extract_now(u) for u in users]
        if not any(r.exchanges for r in reports):
            summaries = await engine.pending()
            if not any(s.exchanges for s in summaries):
                break
            await asyncio.sleep(LEASE_SECONDS / 2)  # others' leases: wait for them
    await engine.stop()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(work(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:]))
