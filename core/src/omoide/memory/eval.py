"""``omoide eval``: retrieval quality and read latency of the read engines, side by side.

Two data formats:

- the probe format of ``shared/memory.md`` (JSON lines: a scenario with ``now``,
  memories and queries grouped into surface variants, ``expect`` = memory ids any
  of which is a hit, ``[]`` = inject nothing);
- LoCoMo (``locomo10.json``): every turn becomes a memory said at its session's
  date, each question is asked with ``now`` = the last session's date, and
  recall@5 = |evidence ∩ injected turns| / |evidence| per category; category 5
  (adversarial) is scored as "nothing should be injected".

Memories go straight into the store as if extraction had just written them (no
dedup). Each scenario's user gets its own namespace, so scenarios never see each
other's memories. Figures are computed in-process against the configured
embedder and whatever store the caller passes (the CLI uses the in-memory store
double by default: latency then measures the engine, not a database).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from omoide.memory.engine import MemoryEngine
from omoide.types import Memory

Progress = Callable[[int, int, str], None]


def _memory_id(scope: str, local_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"omoide-eval:{scope}:{local_id}"))


@dataclass
class EngineTally:
    """Per-engine counters for one or more data sets."""

    hits: int = 0
    positives: int = 0
    false_injections: int = 0
    negatives: int = 0
    groups: dict[str, set[bool]] = field(default_factory=lambda: defaultdict(set))
    latency_total: list[float] = field(default_factory=list)
    latency_read: list[float] = field(default_factory=list)
    timeouts: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)
    dense_only: list[dict[str, Any]] = field(default_factory=list)
    recall_by_category: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def summary(self) -> dict[str, Any]:
        flipped = sum(1 for outcomes in self.groups.values() if len(outcomes) > 1)
        out: dict[str, Any] = {
            "hit_at_3": _ratio(self.hits, self.positives),
            "false_injection_rate": _ratio(self.false_injections, self.negatives),
            "flip_rate": _ratio(flipped, len(self.groups)),
            "latency_ms": _percentiles(self.latency_total),
            "latency_ms_without_embedding": _percentiles(self.latency_read),
            "queries": self.positives + self.negatives,
            "groups": len(self.groups),
            "timeouts": self.timeouts,
        }
        if self.recall_by_category:
            out["recall_at_5"] = {cat: round(statistics.fmean(v), 4)
                                  for cat, v in sorted(self.recall_by_category.items())}
        return out


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def _percentiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None}
    ordered = sorted(values)

    def pick(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))], 2)

    return {"p50": pick(0.5), "p95": pick(0.95)}


def load_probe(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def is_locomo(path: Path) -> bool:
    """A JSON list of samples with ``qa`` and ``conversation`` (probe files are JSON lines)."""
    text = path.read_text(encoding="utf-8").lstrip()
    if not text.startswith("["):
        return False
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    return bool(data) and isinstance(data[0], dict) and "qa" in data[0] \
        and "conversation" in data[0]


def _progress_bar(stream: TextIO) -> Progress:
    last: list[Any] = [0.0, ""]

    def show(done: int, total: int, label: str) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < 0.2 and label == last[1]:
            return
        if last[1] and label != last[1] and not last[1].startswith(label):
            stream.write("\n")
        last[0], last[1] = now, label
        width = 30
        filled = int(width * done / max(1, total))
        stream.write(f"\r{label:<24} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return show


class Evaluator:
    """Runs data sets against one :class:`MemoryEngine` for each named read engine."""

    def __init__(self, engine: MemoryEngine, engines: Sequence[str], *,
                 progress: Progress | None = None, keep_misses: int = 50) -> None:
        self.engine = engine
        self.engines = list(engines)
        self.tallies = {e: EngineTally() for e in self.engines}
        self.locomo_tallies = {e: EngineTally() for e in self.engines}
        self.progress = progress or (lambda done, total, label: None)
        self.keep_misses = keep_misses

    # -- probe format ---------------------------------------------------------------
    async def run_probe(self, path: Path) -> None:
        scenarios = load_probe(path)
        total = sum(len(s["queries"]) for s in scenarios)
        done = 0
        for s in scenarios:
            scope = f"{path.stem}:{s['id']}"
            user = f"{scope}:{s['user']}"
            ids = {m["id"]: _memory_id(scope, m["id"]) for m in s["memories"]}
            back = {v: k for k, v in ids.items()}
            memories = [Memory(id=ids[m["id"]], user=user, text=m["text"],
                               created_at=datetime.fromisoformat(m["created_at"]))
                        for m in s["memories"]]
            await self.engine.add_memories(user, memories)
            now = datetime.fromisoformat(s["now"])
            for q in s["queries"]:
                for name in self.engines:
                    recall = await self.engine.recall(user, q["text"], now, engine=name)
                    got = [back.get(r.memory.id, r.memory.id) for r in recall.memories]
                    self._score(name, scope, q, got, recall)
                done += 1
                self.progress(done, total, path.name)

    def _score(self, name: str, scope: str, q: dict[str, Any], got: list[str],
               recall: Any) -> None:
        t = self.tallies[name]
        expect = list(q.get("expect") or [])
        if expect:
            t.positives += 1
            ok = any(e in got[:3] for e in expect)
            t.hits += ok
        else:
            t.negatives += 1
            ok = not got
            t.false_injections += not ok
        t.groups[f"{scope}:{q.get('group', q['text'])}"].add(ok)
        self._latency(t, recall)
        if recall.details.get("gate") == "dense margin":
            t.dense_only.append({"query": q["text"], "ok": ok,
                                 "dense_margin": recall.details.get("dense_margin"),
                                 "dense_spread": recall.details.get("dense_spread")})
        if not ok and len(t.misses) < self.keep_misses:
            t.misses.append({"scenario": scope, "query": q["text"], "expect": expect,
                             "got": got, "gate": recall.details.get("gate"),
                             "dense_margin": recall.details.get("dense_margin")})

    @staticmethod
    def _latency(t: EngineTally, recall: Any) -> None:
        total = recall.timings_ms.get("total", 0.0)
        t.latency_total.append(total)
        t.latency_read.append(max(0.0, total - recall.timings_ms.get("embed", 0.0)))
        t.timeouts += bool(recall.timed_out)

    # -- LoCoMo -----------------------------------------------------------------------
    async def run_locomo(self, path: Path, *, limit_conversations: int | None = None,
                         limit_questions: int | None = None, k: int = 5) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        if limit_conversations:
            data = data[:limit_conversations]
        tz = ZoneInfo(self.engine.timezone)
        plan: list[tuple[str, dict[str, str], datetime, list[dict[str, Any]]]] = []
        for sample in data:
            scope = f"locomo:{sample.get('sample_id', len(plan))}"
            user = f"{scope}:user"
            conv = sample["conversation"]
            memories: list[Memory] = []
            ids: dict[str, str] = {}
            last_date: datetime | None = None
            n = 1
            while f"session_{n}" in conv:
                said = _locomo_date(conv.get(f"session_{n}_date_time", ""), tz)
                for turn in conv[f"session_{n}"]:
                    text = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        text += f" [shares a photo of {turn['blip_caption']}]"
                    mid = _memory_id(scope, turn["dia_id"])
                    ids[mid] = turn["dia_id"]
                    memories.append(Memory(mid, user, text, said))
                last_date = said if last_date is None or said > last_date else last_date
                n += 1
            qa = sample["qa"][:limit_questions] if limit_questions else sample["qa"]
            plan.append((user, ids, last_date or datetime.now(tz), qa))
            self.progress(0, 1, f"embedding {scope}")
            await self.engine.add_memories(user, memories)
        total = sum(len(p[3]) for p in plan)
        done = 0
        saved = self.engine.config
        self.engine.config = saved.model_copy(update={
            "max_results": k, "baseline": saved.baseline.model_copy(update={"max_results": k})})
        try:
            for user, ids, now, qa in plan:
                for q in qa:
                    evidence = {e.strip() for e in q.get("evidence", []) if e}
                    cat = str(q.get("category"))
                    for name in self.engines:
                        recall = await self.engine.recall(user, str(q["question"]), now,
                                                          engine=name)
                        got = {ids.get(r.memory.id, "") for r in recall.memories}
                        t = self.locomo_tallies[name]
                        self._latency(t, recall)
                        if cat == "5":
                            t.negatives += 1
                            t.false_injections += bool(got)
                        elif evidence:
                            t.recall_by_category[cat].append(len(evidence & got) / len(evidence))
                    done += 1
                    self.progress(done, total, "locomo questions")
        finally:
            self.engine.config = saved

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"engines": {}}
        for name in self.engines:
            probe = self.tallies[name]
            entry: dict[str, Any] = probe.summary() if probe.positives + probe.negatives else {
                "hit_at_3": None, "false_injection_rate": None, "flip_rate": None,
                "latency_ms": {"p50": None, "p95": None}}
            loco = self.locomo_tallies[name]
            if loco.latency_total:
                entry["locomo"] = {
                    "recall_at_5": loco.summary().get("recall_at_5", {}),
                    "category_5_false_injection_rate": _ratio(loco.false_injections,
                                                              loco.negatives),
                    "latency_ms": _percentiles(loco.latency_total),
                    "latency_ms_without_embedding": _percentiles(loco.latency_read),
                    "questions": len(loco.latency_total),
                }
            out["engines"][name] = entry
        return out


def _locomo_date(text: str, tz: ZoneInfo) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (noon when unreadable)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=tz)
        except ValueError:
            continue
    return datetime(2023, 1, 1, 12, tzinfo=tz)


def render_table(report: dict[str, Any], stream: TextIO = sys.stdout) -> None:
    """A plain-text table of the report."""
    engines = report["engines"]
    rows: list[tuple[str, ...]] = [("engine", "hit@3", "false inj.", "flip", "p50 ms",
                                    "p95 ms", "p50 no-emb",
             "p95 no-emb")]

    def fmt(v: Any) -> str:
        return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

    for name, e in engines.items():
        lat = e.get("latency_ms", {})
        raw = e.get("latency_ms_without_embedding", {})
        rows.append((name, fmt(e.get("hit_at_3")), fmt(e.get("false_injection_rate")),
                     fmt(e.get("flip_rate")), fmt(lat.get("p50")), fmt(lat.get("p95")),
                     fmt(raw.get("p50")), fmt(raw.get("p95"))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        stream.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + "\n")
    loco = {n: e["locomo"] for n, e in engines.items() if "locomo" in e}
    if loco:
        cats = sorted({c for v in loco.values() for c in v["recall_at_5"]})
        stream.write("\nLoCoMo recall@5 per category (5 = adversarial: false-injection rate)\n")
        head = ["engine", *[f"cat {c}" for c in cats], "cat 5 false inj.", "p50 ms", "p95 ms"]
        lines: list[list[str]] = [head]
        for name, v in loco.items():
            lines.append([name, *[fmt(v["recall_at_5"].get(c)) for c in cats],
                          fmt(v["category_5_false_injection_rate"]),
                          fmt(v["latency_ms"]["p50"]), fmt(v["latency_ms"]["p95"])])
        widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
        for line in lines:
            stream.write("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + "\n")


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache of vectors (``omoide eval --embed-cache``).

    Repeated evaluation runs then measure the engines, not the embedding model again;
    latency "with embedding" is only meaningful on a cold cache (the CLI says so).
    """

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.name = inner.name
        self.dims = inner.dims
        self.model_id = inner.model_id
        self.config = inner.config
        self._cache: dict[tuple[str, str], Any] = {}
        self.hits = 0
        if path.exists():
            import pickle
            with path.open("rb") as f:
                stored = pickle.load(f)
            if stored.get("model") == inner.model_id:
                self._cache = stored["vectors"]

    def save(self) -> None:
        import pickle
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("wb") as f:
            pickle.dump({"model": self.model_id, "vectors": self._cache}, f)

    async def embed(self, texts: Sequence[str], purpose: str = "document",
                    priority: Any = None) -> Any:
        import numpy as np
        missing = [t for t in dict.fromkeys(texts) if (purpose, t) not in self._cache]
        if missing:
            vectors = await self.inner.embed(missing, purpose, priority)
            for t, v in zip(missing, vectors, strict=True):
                self._cache[(purpose, t)] = v
        self.hits += len(texts) - len(missing)
        return np.stack([self._cache[(purpose, t)] for t in texts]) if texts else \
            np.zeros((0, self.dims), dtype=np.float32)

    async def embed_query(self, text: str) -> Any:
        return (await self.embed([text], "query"))[0]

    async def fingerprint(self) -> Any:
        return await self.inner.fingerprint()
