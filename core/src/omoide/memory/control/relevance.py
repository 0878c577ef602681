"""Relevance for people searching their memories: which memories a query is about.

:meth:`MemoryEngine.search` ranks every memory and keeps them all; a person typing
「株価」 into the console must instead see nothing when nothing is about it. A fixed
cosine cut cannot do that: with e5 every pair of Japanese sentences sits at 0.8-0.9.
So a memory is listed on the engine's evidence, each kind measured on its own scale:

- **words**: the query's content nouns (Sudachi, as the lexical channel sees them, date
  words left to the date evidence) that appear literally in the memory. All of them is
  enough on its own; some of them is not (「東京タワー」 is not about every memory
  that says 東京), though the meaning measure below still sees what they share. (The
  engine's sound matching, which finds 「政治」 in 「成人」 for misheard speech, is not
  used for typed search.)
- **date**: the memory's dates fall in the range the query names (来週, 5月3日...).
  Enough on its own when the query asks about nothing else, or nothing the memory
  lacks (「来週の予定」, 「来週の歯医者」); not otherwise (「明日の天気」 is not about
  tomorrow's dentist appointment).
- **meaning**: how far the memory's cosine stands above what the same query scores
  against memory-like sentences about other things, in standard deviations, averaged
  with how far it stands above what other short queries score against this memory
  (a "hub" memory close to everything gains nothing). Both references are fixed
  background sentences embedded once per embedder, so the measure is scale-free: it
  holds for embedders whose cosines all sit in a narrow band.

The evidence adds up in "meaning" units (standard deviations) and ``relevance`` is that
sum over :data:`FULL_EVIDENCE`, clipped to 0..1; :data:`DEFAULT_MIN_RELEVANCE` (0.5)
is three standard deviations of meaning, or every word, or a date on its own.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import numpy as np

from omoide.memory.language.canonical import canonical, to_katakana
from omoide.memory.language.lexicon import Term
from omoide.memory.memory_json import to_json
from omoide.memory.recall.robust import PreparedQuery, prepare
from omoide.types import FloatArray, Memory, Priority

if TYPE_CHECKING:
    from omoide.memory.engine import MemoryEngine
    from omoide.memory.index.person_index import UserIndex

FULL_EVIDENCE = 6.0
"""Evidence (in standard deviations of meaning) that makes a relevance of 1.0."""
DEFAULT_MIN_RELEVANCE = 0.5
"""The console's default threshold: three standard deviations of meaning, all of the
query's words, or a date with nothing else asked."""

GENERIC_NOUNS = frozenset({
    "予定", "用事", "こと", "事", "話", "件", "思い出", "記憶", "約束", "出来事", "最近",
    "ヨテイ", "ヨウジ", "コト", "ハナシ", "ケン", "オモイデ", "キオク", "ヤクソク", "デキゴト",
    "サイキン"})
"""Nouns that only restate "my plans / things" (「来週の予定」 asks about the date)."""

BACKGROUND_MEMORIES = (
    "あなたは週末に近所の図書館で本を借りている。",
    "あなたの兄は札幌で美容師をしている。",
    "あなたは毎晩寝る前にストレッチをしている。",
    "あなたは来月、引っ越しを予定している。",
    "あなたはコーヒーより紅茶が好きだ。",
    "あなたは高校生のときに吹奏楽部でトランペットを吹いていた。",
    "あなたの娘は小学3年生で、水泳を習っている。",
    "あなたは先月、車を買い替えた。",
    "あなたは朝ごはんにいつも納豆を食べる。",
    "あなたは英会話教室に週に一回通っている。",
    "あなたは昨年、京都へ紅葉を見に行った。",
    "あなたは家庭菜園でトマトとナスを育てている。",
    "あなたは歴史小説を読むのが好きだ。",
    "あなたの父は定年退職して、釣りに夢中になっている。",
    "あなたは電車の中でポッドキャストを聞いている。",
    "あなたは甘いものが苦手だ。",
    "あなたは毎年お正月に実家へ帰省する。",
    "あなたは先週、風邪をひいて会社を休んだ。",
    "あなたはカメラが趣味で、週末は写真を撮りに出かける。",
    "あなたはマラソン大会に出るために練習している。",
    "あなたは友達と月に一度ボードゲーム会を開いている。",
    "あなたは夏休みに北海道をドライブする予定だ。",
    "あなたはお風呂にゆっくり入るのが好きだ。",
    "あなたの祖母は九十歳で、元気に畑仕事をしている。",
    "あなたは職場まで自転車で二十分かけて通っている。",
    "あなたは料理教室で和食の基本を習っている。",
    "あなたは夜更かしをしがちで、朝起きるのが苦手だ。",
    "あなたはアニメの新作を毎期チェックしている。",
    "あなたは年末に大掃除をする習慣がある。",
    "あなたは会社の同僚とランチに行くことが多い。",
    "あなたは去年から陶芸を始めた。",
    "あなたは雨の日は家で映画を観て過ごす。",
    "あなたはキャンプ道具を集めている。",
    "あなたは毎朝ベランダの植物に水をやっている。",
    "あなたの弟は大学で物理を研究している。",
    "あなたは温泉旅行が好きで、よく箱根や草津に行く。",
    "あなたは最近、筋トレを始めた。",
    "あなたは字を書くのが苦手で、手紙はパソコンで書く。",
    "あなたは来週の日曜日に親戚の法事がある。",
    "あなたはスーパーのポイントカードを集めている。",
)
"""Memory-like sentences about many things: what an unrelated memory scores."""

BACKGROUND_QUERIES = (
    "天気", "ニュース", "昨日の夕飯", "週末の予定", "好きな食べ物", "家族のこと", "趣味", "健康",
    "旅行", "買い物", "音楽", "スポーツ", "仕事の話", "友達", "ゲーム", "誕生日", "病院", "お金",
    "映画", "勉強", "車", "動物", "季節", "料理", "朝ごはん", "夜の過ごし方", "引っ越し", "学校",
    "電話", "本",
)
"""Short searches about many things: what an unrelated query scores against a memory."""


@dataclass(frozen=True)
class Evidence:
    """Why a memory is (or is not) relevant to a query."""

    words: tuple[str, ...]
    """The query's content words found in the memory."""
    words_asked: int
    """How many content words the query has (date words excluded)."""
    date: str | None
    """The query's date expression the memory's dates fall in."""
    meaning_sd: float
    """How far the cosine stands above the background, in standard deviations."""

    def to_json(self) -> dict[str, object]:
        return {"words": list(self.words), "words_asked": self.words_asked,
                "date": self.date, "meaning_sd": round(self.meaning_sd, 2)}


@dataclass(frozen=True)
class RelevantMemory:
    memory: Memory
    relevance: float
    """0..1; :data:`DEFAULT_MIN_RELEVANCE` is the console's threshold."""
    evidence: Evidence

    def to_json(self) -> dict[str, Any]:
        """The memory in the export format, with ``score`` (= ``relevance``) and the
        ``evidence``."""
        return {"score": round(self.relevance, 4), "relevance": round(self.relevance, 4),
                **to_json(self.memory), "evidence": self.evidence.to_json()}


@dataclass(frozen=True)
class _Background:
    documents: FloatArray
    queries: FloatArray


class RelevanceJudge:
    """Searches one engine's memories by relevance (the console's search).

    The background sentences are embedded once, on the first search, at batch priority.
    """

    def __init__(self, engine: MemoryEngine) -> None:
        self._engine = engine
        self._background: _Background | None = None
        self._model_id: str | None = None
        self._lock = asyncio.Lock()

    async def search(self, user: str, query: str, *,
                     min_relevance: float = DEFAULT_MIN_RELEVANCE, limit: int = 20,
                     now: datetime | None = None) -> list[RelevantMemory]:
        """``user``'s memories whose relevance to ``query`` is at least ``min_relevance``,
        most relevant first (newer first on ties); superseded ones included."""
        engine = self._engine
        zone = ZoneInfo(engine.timezone)
        now = (now or datetime.now(zone)).astimezone(zone)
        prepared = prepare(query, now)
        vector = await engine.embedder.embed_query(prepared.text)
        background = await self._background_for_embedder()
        index = await engine.index(user)
        judged = judge(index, prepared, np.asarray(vector, dtype=np.float32), background)
        kept = [r for r in judged if r.relevance >= min_relevance]
        kept.sort(key=lambda r: (-r.relevance, -r.memory.created_at.timestamp()))
        return kept[:limit]

    async def _background_for_embedder(self) -> _Background:
        embedder = self._engine.embedder
        async with self._lock:
            if self._background is None or self._model_id != embedder.model_id:
                docs = await embedder.embed(list(BACKGROUND_MEMORIES), "document",
                                            Priority.BATCH)
                queries = await embedder.embed(list(BACKGROUND_QUERIES), "query",
                                               Priority.BATCH)
                self._background = _Background(np.asarray(docs, dtype=np.float32),
                                               np.asarray(queries, dtype=np.float32))
                self._model_id = embedder.model_id
            return self._background


def judge(index: UserIndex, q: PreparedQuery, vector: FloatArray,
          background: _Background) -> list[RelevantMemory]:
    """Every memory of ``index`` with its relevance to ``q`` (unsorted)."""
    memories = index.memories()
    if not memories:
        return []
    asked = _asked_terms(q)
    others = [t for t in asked if not (t.keys & GENERIC_NOUNS)]
    date_label = {s.start: s.label for s in q.spans}
    temporal = index.temporal(q.spans) if q.spans else {}
    meaning = _meaning_sd(index, memories, vector, background)
    out: list[RelevantMemory] = []
    for m in memories:
        found = _words_in(m.text, asked)
        evidence = 0.0
        if asked and len(found) == len(asked):
            evidence += FULL_EVIDENCE
        date = None
        if m.id in temporal:
            date = next(iter(date_label.values()), None)
            if all(t.surface in found for t in others):
                evidence += FULL_EVIDENCE
        sd = meaning.get(m.id, 0.0)
        evidence += max(sd, 0.0)
        relevance = min(1.0, evidence / FULL_EVIDENCE)
        out.append(RelevantMemory(m, relevance, Evidence(tuple(found), len(asked), date, sd)))
    return out


def _asked_terms(q: PreparedQuery) -> list[Term]:
    """The query's content words (nouns, names; not its date words), one per surface."""
    excluded = [e for e in q.date_words if e]
    seen: set[str] = set()
    out: list[Term] = []
    for term in q.analysis.terms:
        if term.weight < 1.0 or not term.surface:
            continue
        kana = to_katakana(term.surface)
        if any(term.surface in e or e in term.surface or kana in e for e in excluded):
            continue
        if term.surface in seen:
            continue
        seen.add(term.surface)
        out.append(term)
    return out


def _words_in(text: str, terms: list[Term]) -> list[str]:
    """Surfaces of ``terms`` that appear literally in ``text`` (width and kana folded)."""
    plain = canonical(text).lower()
    kana = to_katakana(plain)
    found = []
    for t in terms:
        keys = {t.surface.lower(), *(k.lower() for k in t.keys)}
        if any((k in plain or to_katakana(k) in kana) and not _is_reading(k, t) for k in keys):
            found.append(t.surface)
    return found


def _is_reading(key: str, term: Term) -> bool:
    """Whether ``key`` is the katakana reading of a word written in kanji (セイジ for
    政治): a sound, not a spelling, so it could match another word's kana."""
    return _has_kanji(term.surface) and not _has_kanji(key)


def _has_kanji(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def _meaning_sd(index: UserIndex, memories: list[Memory], vector: FloatArray,
                background: _Background) -> dict[str, float]:
    """Per memory: standard deviations its cosine stands above the background."""
    ids = [m.id for m in memories if index.vector(m.id) is not None]
    if not ids:
        return {}
    matrix = np.stack([np.asarray(index.vector(i), dtype=np.float32) for i in ids])
    cos = matrix @ vector
    against_docs = background.documents @ vector
    query_sd = float(against_docs.std()) or 1.0
    z_query = (cos - float(against_docs.mean())) / query_sd
    hub = background.queries @ matrix.T            # (background queries, memories)
    hub_sd = hub.std(axis=0)
    hub_sd[hub_sd == 0] = 1.0
    z_memory = (cos - hub.mean(axis=0)) / hub_sd
    z = (z_query + z_memory) / 2
    return {i: float(v) for i, v in zip(ids, z, strict=True) if math.isfinite(float(v))}
