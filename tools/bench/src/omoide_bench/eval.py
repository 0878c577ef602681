"""``omoide eval``: retrieval quality and read latency of the read engines, side by side.

Two data formats:

- the probe format of ``shared/memory.md`` (JSON lines: a scenario with ``now``,
  memories and queries grouped into surface variants, ``expect`` = memory ids any
  of which is a hit, ``[]`` = inject nothing);
- LoCoMo (``locomo10.json``): every turn becomes a memory said at its session's
  date, each question is asked with ``now`` = the last session's date, and
  recall@5 = |evidence ∩ injected turns| / |evidence| per category; category 5
  (adversarial) is scored as "nothing should be injected".

A hit counts an expected memory present either among the injected episodic
memories (top 3) or in the profile block (which is in every prompt); a false
injection counts episodic injections only (the profile is always there, and its
budget, not the evaluation, decides what is always on). Eval memories arrive without
a kind, so the deterministic classifier (:func:`omoide.memory.facts.profile.classify`)
decides profile or episodic. Every data file gets its own table; ``engines`` in the
report also sums the probe files. Every miss is kept with its reason. Queries that carry
a ``"kind"`` (direct / time / update / implicit / none, or any string) are also counted
per kind (``kinds`` in each summary, a second table per file); files without kinds
report exactly as before.

Memories go straight into the store as if extraction had just written them (no
dedup), and each scenario's questions are asked once the person's index is built: the
steady state of a person whose memories arrived over months (a read right after a
bulk write, while the index builds, is ``omoide bench memory_read``'s business), so the
figures do not depend on how loaded the machine is. Each scenario's user gets its own
namespace, so scenarios never see each other's memories. Figures are computed
in-process against the configured embedder and whatever store the caller passes (the
CLI uses the in-memory store double by default: latency then measures the engine, not a
database).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
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
    episodic_hits: int = 0
    profile_only_hits: int = 0
    profile_chars: dict[str, int] = field(default_factory=dict)
    profile_facts: dict[str, int] = field(default_factory=dict)
    misses: list[dict[str, Any]] = field(default_factory=list)
    dense_only: list[dict[str, Any]] = field(default_factory=list)
    recall_by_category: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_kind: dict[str, EngineTally] = field(default_factory=dict)
    """The same counters per query ``"kind"`` (only for queries that carry one)."""

    def count(self, group: str, expect: bool, ok: bool, *, episodic: bool = False,
              in_profile: bool = False) -> None:
        """Count one scored query: a hit or miss when it expects a memory, else whether
        it injected nothing; ``group`` collects its surface variants for the flip rate."""
        if expect:
            self.positives += 1
            self.hits += ok
            self.episodic_hits += episodic
            self.profile_only_hits += in_profile and not episodic
        else:
            self.negatives += 1
            self.false_injections += not ok
        self.groups[group].add(ok)

    def merge(self, other: EngineTally) -> None:
        """Add ``other``'s counts (for the sum over data files)."""
        self.hits += other.hits
        self.positives += other.positives
        self.false_injections += other.false_injections
        self.negatives += other.negatives
        for k, v in other.groups.items():
            self.groups[k] |= v
        self.latency_total += other.latency_total
        self.latency_read += other.latency_read
        self.timeouts += other.timeouts
        self.episodic_hits += other.episodic_hits
        self.profile_only_hits += other.profile_only_hits
        self.profile_chars.update(other.profile_chars)
        self.profile_facts.update(other.profile_facts)
        self.misses += other.misses
        self.dense_only += other.dense_only
        for k, vals in other.recall_by_category.items():
            self.recall_by_category[k] += vals
        for k, sub in other.by_kind.items():
            self.by_kind.setdefault(k, EngineTally()).merge(sub)

    def kind_summary(self) -> dict[str, Any]:
        """One kind's figures: queries, hit@3 (None when none expects a memory), false
        injections as a count over ``negatives`` (the queries that expect nothing) and a
        rate (None when every query expects a memory), flip; and which path carried the
        hits: ``via_recall`` (an expected memory among the episodic top 3) and
        ``via_profile_only`` (only the profile block held it)."""
        flipped = sum(1 for outcomes in self.groups.values() if len(outcomes) > 1)
        return {"queries": self.positives + self.negatives,
                "hit_at_3": _ratio(self.hits, self.positives),
                "false_injections": self.false_injections, "negatives": self.negatives,
                "false_injection_rate": _ratio(self.false_injections, self.negatives),
                "flip_rate": _ratio(flipped, len(self.groups)), "groups": len(self.groups),
                "via_recall": self.episodic_hits, "via_profile_only": self.profile_only_hits}

    def summary(self) -> dict[str, Any]:
        flipped = sum(1 for outcomes in self.groups.values() if len(outcomes) > 1)
        out: dict[str, Any] = {
            "hit_at_3": _ratio(self.hits, self.positives),
            "false_injection_rate": _ratio(self.false_injections, self.negatives),
            "flip_rate": _ratio(flipped, len(self.groups)),
            "episodic_hit_at_3": _ratio(self.episodic_hits, self.positives),
            "profile_only_hit_rate": _ratio(self.profile_only_hits, self.positives),
            "profile_chars_mean": round(statistics.fmean(self.profile_chars.values()), 1)
            if self.profile_chars else None,
            "profile_facts_mean": round(statistics.fmean(self.profile_facts.values()), 1)
            if self.profile_facts else None,
            "latency_ms": _percentiles(self.latency_total),
            "latency_ms_without_embedding": _percentiles(self.latency_read),
            "queries": self.positives + self.negatives,
            "groups": len(self.groups),
            "timeouts": self.timeouts,
        }
        if self.by_kind:
            out["kinds"] = {k: self.by_kind[k].kind_summary() for k in _kind_order(self.by_kind)}
        if self.recall_by_category:
            out["recall_at_5"] = {cat: round(statistics.fmean(v), 4)
                                  for cat, v in sorted(self.recall_by_category.items())}
        return out


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


KIND_ORDER = ("direct", "time", "update", "implicit", "none")
"""The kinds of ``shared/memory.md``'s year set, in the order tables list them (any other
kind follows, alphabetically)."""


def _kind_order(kinds: Any) -> list[str]:
    known = [k for k in KIND_ORDER if k in kinds]
    return known + sorted(k for k in kinds if k not in KIND_ORDER)


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
    """Runs data sets against one :class:`MemoryEngine` for each named read engine.

    ``transform``: an optional async function applied to every query text before it is
    asked (``omoide eval --speak`` passes TTS then ASR).
    """

    def __init__(self, engine: MemoryEngine, engines: Sequence[str], *,
                 progress: Progress | None = None,
                 transform: Callable[[str], Awaitable[str]] | None = None) -> None:
        self.engine = engine
        self.engines = list(engines)
        self.files: dict[str, dict[str, EngineTally]] = {}
        """Per data file (its name), per engine."""
        self.locomo_files: set[str] = set()
        self.progress = progress or (lambda done, total, label: None)
        self.transform = transform

    def _tallies(self, label: str) -> dict[str, EngineTally]:
        return self.files.setdefault(label, {e: EngineTally() for e in self.engines})

    @property
    def tallies(self) -> dict[str, EngineTally]:
        """Per engine, summed over the probe files."""
        out = {e: EngineTally() for e in self.engines}
        for label, per_engine in self.files.items():
            if label in self.locomo_files:
                continue
            for e, t in per_engine.items():
                out[e].merge(t)
        return out

    # -- probe format ---------------------------------------------------------------
    async def run_probe(self, path: Path, label: str | None = None) -> None:
        label = label or path.name
        tallies = self._tallies(label)
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
            await self.engine.index(user)   # the steady state: the person's index is built
            now = datetime.fromisoformat(s["now"])
            for q in s["queries"]:
                text = q["text"]
                if self.transform is not None:
                    text = await self.transform(text)
                for name in self.engines:
                    recall = await self.engine.recall(user, text, now, engine=name)
                    got = [back.get(r.memory.id, r.memory.id) for r in recall.memories]
                    profile = [back.get(i, i) for i in recall.profile.ids]
                    if recall.profile:
                        tallies[name].profile_chars[user] = recall.profile.chars
                        tallies[name].profile_facts[user] = len(recall.profile.facts)
                    await self._score(tallies[name], scope, user, {**q, "text": text}, got,
                                      profile, recall, ids, s["now"])
                done += 1
                self.progress(done, total, path.name)

    async def _score(self, t: EngineTally, scope: str, user: str, q: dict[str, Any],
                     got: list[str], profile: list[str], recall: Any,
                     ids: dict[str, str], now: str) -> None:
        expect = list(q.get("expect") or [])
        episodic = any(e in got[:3] for e in expect)
        in_profile = any(e in profile for e in expect)
        ok = (episodic or in_profile) if expect else not got
        group = f"{scope}:{q.get('group', q['text'])}"
        t.count(group, bool(expect), ok, episodic=episodic, in_profile=in_profile)
        if q.get("kind") is not None:
            t.by_kind.setdefault(str(q["kind"]), EngineTally()).count(
                group, bool(expect), ok, episodic=episodic, in_profile=in_profile)
        self._latency(t, recall)
        if recall.details.get("gate") == "dense margin":
            t.dense_only.append({"query": q["text"], "ok": ok,
                                 "dense_margin": recall.details.get("dense_margin"),
                                 "dense_spread": recall.details.get("dense_spread")})
        if not ok:
            t.misses.append(await self._miss(scope, user, q, expect, got, recall, ids, now))

    async def _miss(self, scope: str, user: str, q: dict[str, Any], expect: list[str],
                    got: list[str], recall: Any, ids: dict[str, str],
                    now: str) -> dict[str, Any]:
        """Why a query missed: the gate, what the utterance was taken for, what was heard,
        the dates it resolved to, and where each expected memory stood."""
        d = recall.details
        miss: dict[str, Any] = {
            "scenario": scope, "query": q["text"], "expect": expect, "got": got,
            "engine": recall.engine, "gate": d.get("gate"), "intent": d.get("intent"),
            "heard": d.get("heard"), "matched": d.get("matched"),
            "date_ranges": d.get("date_ranges"),
            "dense_margin": d.get("dense_margin")}
        if q.get("spoken"):
            miss["spoken"] = q["spoken"]
        reader = await self.engine.read_engine_named(recall.engine)
        if reader.capabilities.uses_index and expect:
            from omoide.memory.recall.robust import explain, prepare
            index = await self.engine.index(user)
            where: dict[str, str] = {}
            for e in expect:
                c = index.classification(ids.get(e, e))
                where[e] = "?" if c is None else (
                    f"profile ({c.category}) but over the budget" if c.profile
                    else f"episodic: {c.reason}")
            miss["expected_memories"] = where
            prepared = prepare(q["text"], datetime.fromisoformat(now))
            vector = await self.engine.embedder.embed_query(prepared.text)
            seen = explain(index, prepared, vector, [ids.get(e, e) for e in expect])
            back = {v: k for k, v in ids.items()}
            miss["expected_channels"] = {back.get(k, k): v for k, v in seen.items()}
        channels = {e: {k: round(v, 3) for k, v in r.channels.items() if v == v}
                    for e, r in zip(got, recall.memories, strict=False)}
        if channels:
            miss["channels"] = channels
        return miss

    @staticmethod
    def _latency(t: EngineTally, recall: Any) -> None:
        total = recall.timings_ms.get("total", 0.0)
        t.latency_total.append(total)
        t.latency_read.append(max(0.0, total - recall.timings_ms.get("embed", 0.0)))
        t.timeouts += bool(recall.timed_out)

    # -- LoCoMo -----------------------------------------------------------------------
    async def run_locomo(self, path: Path, *, limit_conversations: int | None = None,
                         limit_questions: int | None = None, k: int = 5) -> None:
        label = path.name
        self.locomo_files.add(label)
        tallies = self._tallies(label)
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
                    memories.append(Memory(mid, user, text, said, kind="event"))
                last_date = said if last_date is None or said > last_date else last_date
                n += 1
            qa = sample["qa"][:limit_questions] if limit_questions else sample["qa"]
            plan.append((user, ids, last_date or datetime.now(tz), qa))
            self.progress(0, 1, f"embedding {scope}")
            await self.engine.add_memories(user, memories)
            await self.engine.index(user)   # the steady state, as for the probe files
        total = sum(len(p[3]) for p in plan)
        done = 0
        saved = self.engine.config
        self.engine.config = saved.model_copy(update={"max_results": k})
        try:
            for user, ids, now, qa in plan:
                for q in qa:
                    evidence = {e.strip() for e in q.get("evidence", []) if e}
                    cat = str(q.get("category"))
                    for name in self.engines:
                        recall = await self.engine.recall(user, str(q["question"]), now,
                                                          engine=name)
                        got = {ids.get(r.memory.id, "") for r in recall.memories}
                        t = tallies[name]
                        self._latency(t, recall)
                        if cat == "5":
                            t.negatives += 1
                            t.false_injections += bool(got)
                        elif evidence:
                            t.recall_by_category[cat].append(len(evidence & got) / len(evidence))
                            if not evidence <= got:
                                t.misses.append(_locomo_miss(q, cat, evidence, got, recall))
                    done += 1
                    self.progress(done, total, "locomo questions")
        finally:
            self.engine.config = saved

    def report(self) -> dict[str, Any]:
        """``engines``: per engine, the probe files summed (and ``locomo`` when one ran);
        ``files``: the same per data file."""
        out: dict[str, Any] = {"engines": {}, "files": {}}
        summed = self.tallies
        for name in self.engines:
            probe = summed[name]
            entry: dict[str, Any] = probe.summary() if probe.positives + probe.negatives else {
                "hit_at_3": None, "false_injection_rate": None, "flip_rate": None,
                "latency_ms": {"p50": None, "p95": None}}
            for label in self.locomo_files:
                entry["locomo"] = _locomo_entry(self.files[label][name])
            out["engines"][name] = entry
        for label, per_engine in self.files.items():
            if label in self.locomo_files:
                out["files"][label] = {"locomo": True, "engines": {
                    n: _locomo_entry(t) for n, t in per_engine.items()}}
            else:
                out["files"][label] = {"engines": {n: t.summary()
                                                   for n, t in per_engine.items()}}
        return out

    def misses(self) -> dict[str, dict[str, list[dict[str, Any]]]]:
        """Every miss, per data file and engine (a LoCoMo question whose evidence turns
        were not all recalled is one too, its category in front of the question)."""
        return {label: {n: t.misses for n, t in per_engine.items()}
                for label, per_engine in self.files.items()}


def _locomo_miss(q: dict[str, Any], cat: str, evidence: set[str], got: set[str],
                 recall: Any) -> dict[str, Any]:
    """A LoCoMo question whose evidence turns were not all recalled (``--misses``)."""
    d = recall.details
    return {"query": f"[cat {cat}] {q['question']}", "expect": sorted(evidence),
            "got": sorted(g for g in got if g), "engine": recall.engine,
            "gate": d.get("gate"), "intent": d.get("intent"), "heard": d.get("heard"),
            "matched": d.get("matched"), "date_ranges": d.get("date_ranges")}


def _locomo_entry(loco: EngineTally) -> dict[str, Any]:
    return {
        "recall_at_5": loco.summary().get("recall_at_5", {}),
        "category_5_false_injection_rate": _ratio(loco.false_injections, loco.negatives),
        "latency_ms": _percentiles(loco.latency_total),
        "latency_ms_without_embedding": _percentiles(loco.latency_read),
        "questions": len(loco.latency_total),
    }


def _locomo_date(text: str, tz: ZoneInfo) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (noon when unreadable)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=tz)
        except ValueError:
            continue
    return datetime(2023, 1, 1, 12, tzinfo=tz)


def _fmt(v: Any) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def _write_rows(rows: list[list[str]], stream: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        stream.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     + "\n")


def _probe_rows(engines: dict[str, Any]) -> list[list[str]]:
    rows = [["engine", "hit@3", "false inj.", "flip", "episodic hit@3", "via profile",
             "profile chars", "profile facts", "p50 ms", "p95 ms", "p50 no-emb", "p95 no-emb"]]
    for name, e in engines.items():
        lat = e.get("latency_ms", {})
        raw = e.get("latency_ms_without_embedding", {})
        rows.append([name, _fmt(e.get("hit_at_3")), _fmt(e.get("false_injection_rate")),
                     _fmt(e.get("flip_rate")), _fmt(e.get("episodic_hit_at_3")),
                     _fmt(e.get("profile_only_hit_rate")), _fmt(e.get("profile_chars_mean")),
                     _fmt(e.get("profile_facts_mean")), _fmt(lat.get("p50")),
                     _fmt(lat.get("p95")), _fmt(raw.get("p50")), _fmt(raw.get("p95"))])
    return rows


def _kind_rows(engines: dict[str, Any]) -> list[list[str]]:
    """Per kind then engine: queries, hit@3, false injections (count / asked, rate), flip;
    empty when no query carries a kind."""
    kinds = _kind_order({k for e in engines.values() for k in e.get("kinds", {})})
    if not kinds:
        return []
    rows = [["kind", "engine", "queries", "hit@3", "false inj.", "flip", "hits via recall",
             "via profile only"]]
    for kind in kinds:
        for name, e in engines.items():
            k = e.get("kinds", {}).get(kind)
            if k is None:
                continue
            false = "-" if k["false_injection_rate"] is None else (
                f"{k['false_injections']}/{k['negatives']} ({k['false_injection_rate']:.3f})")
            rows.append([kind, name, str(k["queries"]), _fmt(k["hit_at_3"]), false,
                         _fmt(k["flip_rate"]), str(k.get("via_recall", "-")),
                         str(k.get("via_profile_only", "-"))])
    return rows


def _locomo_rows(loco: dict[str, Any]) -> list[list[str]]:
    cats = sorted({c for v in loco.values() for c in v["recall_at_5"]})
    rows = [["engine", *[f"cat {c}" for c in cats], "cat 5 false inj.", "p50 ms", "p95 ms"]]
    for name, v in loco.items():
        rows.append([name, *[_fmt(v["recall_at_5"].get(c)) for c in cats],
                     _fmt(v["category_5_false_injection_rate"]),
                     _fmt(v["latency_ms"]["p50"]), _fmt(v["latency_ms"]["p95"])])
    return rows


def render_table(report: dict[str, Any], stream: TextIO | None = None) -> None:
    """One plain-text table per data file ("via profile": hits only the profile made)."""
    stream = stream or sys.stdout
    files = report.get("files") or {"(all)": {"engines": report["engines"]}}
    for i, (label, entry) in enumerate(files.items()):
        if i:
            stream.write("\n")
        if entry.get("locomo"):
            stream.write(f"{label}: LoCoMo recall@5 per category (5 = adversarial: false-"
                         "injection rate)\n")
            _write_rows(_locomo_rows(entry["engines"]), stream)
        else:
            stream.write(f"{label}\n")
            _write_rows(_probe_rows(entry["engines"]), stream)
            kinds = _kind_rows(entry["engines"])
            if kinds:
                stream.write(f"{label} per kind (none: false inj. = injected / asked)\n")
                _write_rows(kinds, stream)


def render_misses(misses: dict[str, dict[str, list[dict[str, Any]]]],
                  stream: TextIO | None = None) -> None:
    """Every miss with its reason, per data file and engine."""
    stream = stream or sys.stdout
    for label, per_engine in misses.items():
        for engine, rows in per_engine.items():
            if not rows:
                continue
            stream.write(f"\nmisses [{engine}] {label}: {len(rows)}\n")
            for m in rows:
                spoken = f" (said: {m['spoken']})" if m.get("spoken") else ""
                stream.write(f"  {m['query']}{spoken} expect={m['expect']} got={m['got']}"
                             f" gate={m.get('gate')} intent={m.get('intent')}")
                for key in ("heard", "matched", "date_ranges", "expected_memories",
                            "expected_channels", "channels"):
                    if m.get(key):
                        stream.write(f" {key}={m[key]}")
                stream.write("\n")


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

    async def embed_query(self, text: str, *, urgent: bool = False) -> Any:
        return (await self.embed([text], "query"))[0]

    async def fingerprint(self) -> Any:
        return await self.inner.fingerprint()


class SpokenQueries:
    """Queries as a recogniser hears them: TTS then ASR, cached on disk (``--speak``).

    The cache maps (TTS model, ASR model, text) to the transcript, so changing either
    component measures afresh. A failing TTS or ASR call raises: a robustness figure
    with silently typed queries in it would be a lie.
    """

    def __init__(self, tts: Any, asr: Any, path: Path) -> None:
        self.tts = tts
        self.asr = asr
        self.path = path
        self.tts_id = f"{tts.name}:{getattr(tts.config, 'model', '') or ''}".rstrip(":")
        self.asr_id = f"{asr.name}:{getattr(asr.config, 'model', '') or ''}".rstrip(":")
        self.transcribed = 0
        self._cache: dict[str, str] = {}
        if path.exists():
            self._cache = json.loads(path.read_text(encoding="utf-8"))

    def _key(self, text: str) -> str:
        return f"{self.tts_id}|{self.asr_id}|{text}"

    async def transcribe(self, text: str) -> str:
        key = self._key(text)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        clip = await self.tts.synthesize(text)
        heard: str = (await self.asr.transcribe(clip)).text
        self._cache[key] = heard
        self.transcribed += 1
        return heard

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self._cache, ensure_ascii=False, indent=0),
                             encoding="utf-8")
