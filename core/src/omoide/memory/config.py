"""The ``memory:`` section of the config, and the options of omoide's own read engines.

The read engine and the extractor are stages picked with ``use:``
(``memory.retrieve``, ``memory.extract``); their options sit beside ``use:`` and are
validated by the chosen component's ``Config`` (:class:`BaselineSettings` for
``baseline``, :class:`RobustSettings` for ``robust``). Everything around the stages
(the time budget, how many memories at most, the profile budget, the journal and the
extraction batches, retries and quarantine) is the core's and stays here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from omoide.components.memory_engine import MemoryEngineConfig
from omoide.stage_spec import StageSpec

DEFAULT_ENGINE = "robust"
DEFAULT_EXTRACTOR = "chat"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BaselineSettings(MemoryEngineConfig):
    """The reference algorithm's numbers (``memory.retrieve: {use: baseline, ...}``)."""

    candidates: int = Field(8, ge=1, description="Top-k by raw cosine before the date bonus.")
    recency_weight: float = Field(0.05, ge=0, description="Weight of exp(-age_days/half_life).")
    recency_days: float = Field(14.0, gt=0,
                                description="Decay constant of the recency bonus, days.")
    threshold: float = Field(0.45, description="Minimum score to inject.")


class RobustSettings(MemoryEngineConfig):
    """Numbers of the robust engine (``memory.retrieve: {use: robust, ...}``; see
    ``shared/memory.md``)."""

    dense_candidates: int = Field(24, ge=1, le=200,
                                  description="Memories fetched from the dense channel.")
    dense_from_index: bool = Field(
        True, description="Run the dense channel on the vectors cached in the per-user index"
        " (built from the store, kept current on this server's writes) instead of a store"
        " search per query.")
    rrf_k: float = Field(10.0, gt=0, description="Rank-fusion constant: 1/(k + rank).")
    lexical_keep_ratio: float = Field(
        0.5, ge=0, le=1, description="Lexical candidates kept: score at least this share of"
        " the best lexical score.")
    min_coverage: float = Field(
        0.0, ge=0, le=1, description="Share of the query's content nouns a memory must"
        " contain for shared words to count as evidence.")
    require_recall_intent: bool = Field(
        False, description="Inject only when the user refers to their own memories, plans or"
        " themselves (覚えてる, 〜だっけ, 予定, 私の ...): turns contextual recall off.")
    context_min_coverage: float = Field(
        0.3, ge=0, le=1, description="Contextual recall (no question about the past): share"
        " of the utterance's content nouns a memory must contain to be injected.")
    context_span_days: int = Field(
        3, ge=1, le=31, description="Contextual recall: a date the utterance names injects"
        " the memories dated in it only when it spans at most this many days (金曜日, 明日,"
        " 週末; not 来月).")
    context_dense_days: int | None = Field(
        14, ge=0, le=60, description="Contextual recall: a remark about the user's own situation"
        " (〜かな, 〜ればいい) that names nothing may inject the one memory it is clearly closest"
        " to (``dense_only_ratio``) when that memory is dated within the past week or this"
        " many days ahead. Null: never.")
    context_sound_letters: int = Field(
        6, ge=4, le=20, description="Contextual recall: a word heard by sound (not spelled"
        " as written) counts for a remark about the user's own situation only when its"
        " sound key has at least this many letters (about three morae).")
    subject_check: bool = Field(
        True, description="When the utterance names a person some memories are about (a"
        " conversation turn's speaker, 「あなたの妹の遥は…」), inject nothing unless a"
        " candidate is that person's own: a memory about someone else answers nothing.")
    # LoCoMo's adversarial false injections: 0.70 -> 0.507, 0.75 -> 0.491, 0.80 -> 0.478,
    # 0.85 -> 0.462 with no other category moving; 0.90 lowers single-hop. 0.80 sits inside
    # that plateau, away from both edges (the Japanese files do not move over it).
    subject_ratio: float = Field(
        0.80, ge=0, le=1, description="Subject check: when the named person's own best word"
        " match (counting only what each conversation turn's speaker says of themselves)"
        " scores under this share of the best match overall, and their closest memory"
        " by meaning is ``subject_gap`` further than someone else's, what the utterance"
        " describes is someone else's: nothing is injected.")
    subject_gap: float = Field(
        0.0, ge=0, le=1, description="Subject check: cosine gap (see ``subject_ratio``).")
    subject_boost: float = Field(
        0.5, ge=0, le=2, description="Rank-fusion bonus (in units of 1/rrf_k) for a memory"
        " that is the named person's own.")
    sound_matching: bool = Field(
        True, description="Match the person's own words by sound (readings folded for"
        " voicing and length, fuzzy within their vocabulary), so mis-heard words still"
        " recall (数末 -> 週末, セミ -> ゼミ).")
    fill_from_dense: bool = Field(
        False, description="Once the gate lets a query through, fill the remaining slots"
        " with the best dense matches (ranking evaluations such as LoCoMo recall@k).")
    dense_only_ratio: float | None = Field(
        0.6, gt=0, le=1, description="Inject the top dense memory on dense evidence alone"
        " when its lead over the second is at least this share of its lead over the median"
        " candidate (one memory clearly stands apart; scale-free, so it holds across"
        " embedders). Null: never inject on dense evidence alone.")


class ProfileSettings(_Strict):
    """The profile block: durable facts about the person, in every prompt."""

    enabled: bool = Field(True, description="Put the person's profile in every prompt.")
    budget_chars: int = Field(
        600, ge=0, le=4000, description="Characters of profile lines at most, most important"
        " first; health and safety facts (allergies) are kept even beyond it.")


class ExtractionSettings(_Strict):
    idle_minutes: float = Field(5.0, gt=0, description="Extract after this much silence.")
    max_exchanges: int = Field(8, ge=1, description="Extract once this many exchanges wait.")
    on_disconnect: bool = Field(True, description="Extract when a device session closes.")
    attempts: int = Field(3, ge=1, description="Tries per extraction call before it stays"
                          " pending (an unreadable answer is asked again).")
    timeout_s: float = Field(
        300.0, gt=0, le=3600, description="Time budget of one extraction call (one batch,"
        " whatever the extractor); a call past it counts as a service outage: the exchanges"
        " stay pending.")
    max_attempts: int = Field(
        3, ge=1, description="Failed extractions of one exchange on its own (an answer that"
        " cannot be used, a refusal) before it is quarantined: set aside with the reason, so"
        " it never blocks the next one (`omoide memory pending`, `retry`, `skip`). Outages of"
        " the chat service do not count.")
    batch_exchanges: int = Field(8, ge=1, le=64,
                                 description="Exchanges per extraction call at most.")
    batch_chars: int = Field(
        2000, ge=200, le=50_000, description="Characters of conversation per extraction call"
        " at most (after cutting long statements); one longer exchange goes alone.")
    max_statement_chars: int = Field(
        500, ge=50, le=10_000, description="A statement (or reply) longer than this is cut"
        " in the extraction prompt, so the answer stays within the fact limit.")
    retry_minutes: float = Field(
        10.0, gt=0, description="How often exchanges still pending (a failed extraction, a"
        " restart) are tried again once their conversation has gone idle.")
    dedup_cosine: float = Field(
        0.92, gt=0, le=1, description="Two facts about the same subject that say the same"
        " thing in other words are duplicates only when their vectors agree this much too;"
        " a close vector alone never makes a duplicate or an update.")


class IndexSettings(_Strict):
    """Per-person indexes held in memory (lexical, temporal and the cached vectors)."""

    budget_mb: float = Field(
        512.0, gt=0, description="Memory all per-person indexes may take together (an"
        " estimate, about 9 KB per memory plus its vector). Beyond it the least recently"
        " used are dropped; a person whose index alone is larger gets dense recall from"
        " the store only.")
    page_size: int = Field(512, ge=1, le=10_000,
                           description="Records read per store call while building an index.")
    concurrent_builds: int = Field(
        2, ge=1, le=32, description="Indexes built at once, in the background, a page at a"
        " time.")
    keep_on_disk: bool = Field(
        True, description="Keep indexes between runs in server.data_dir/indexes.sqlite3, so a"
        " person's first turn after a start loads theirs (about 2.5 ms for 100 memories)"
        " instead of analysing every memory again (about 70 ms).")
    keep_max_memories: int = Field(
        20_000, ge=0, description="Indexes of more memories are rebuilt at each start, not"
        " kept (loading one saves little and writing it takes seconds); the vectors and texts"
        " read for them are kept in server.data_dir/dense/ instead, so their first turns"
        " after a start get dense recall while the store is read.")
    warm_people: int = Field(
        200, ge=0, le=100_000, description="After a start, load the saved indexes of up to"
        " this many people in the background (the most recently written first, within"
        " half of budget_mb), so their first turns have their profile and index at once"
        " instead of waiting for a load. 0: each is loaded on that person's first turn.")
    renew_outdated: bool = Field(
        True, description="After a start, rebuild in the background the saved indexes that"
        " an upgrade of omoide made outdated (their rows stay in indexes.sqlite3 until then),"
        " one at a time while nobody's recall runs, the most recently written first: their"
        " people's first turns then load an index instead of building one.")
    refresh_s: float = Field(
        300.0, gt=0, description="Rebuild a person's index (the lexical, temporal and dense"
        " index engines such as `robust` read) from the store in the background when it is"
        " older than this (picks up other servers' writes to a shared store); the check of"
        " the store's count waits, up to another refresh_s, until no recall runs.")
    first_turn_wait_share: float = Field(
        0.3, ge=0, le=1, description="Share of memory.time_budget_ms a recall waits for a"
        " person's index that is being built (their first turn since start or since it was"
        " dropped; 90 ms of the default 300) before it answers from a dense search instead:"
        " of the records the build has read, else of the store. A recall does not wait for"
        " a large person's index whose records are being analysed.")


class MemoryConfig(_Strict):
    """Long-term memory: where it lives, how it is written and read."""

    retrieve: StageSpec | None = Field(
        None, description="The read engine and its options: `{use: robust}` (the default;"
        " options: the robust engine's table), `{use: baseline}` (the reference's algorithm,"
        " for comparison) or a plugin's memory engine (`omoide plugins`).")
    engine: str | None = Field(
        None, description="Shorthand for `retrieve: {use: NAME}` without options"
        " (`engine: baseline`), as configs said before `retrieve`; give one or the other.")
    extract: StageSpec = Field(
        default_factory=lambda: StageSpec(use=DEFAULT_EXTRACTOR),
        description="How exchanges become facts: `{use: chat}` (the configured chat model"
        " with omoide's prompt) or a plugin's extractor. Journal, batches, dedup,"
        " retries and quarantine stay the core's (`extraction`).")
    max_results: int = Field(3, ge=0, le=10, description="Memories injected at most.")
    time_budget_ms: float = Field(
        300.0, gt=0, description="Retrieval longer than this is dropped for the turn.")
    query_embed_wait_share: float = Field(
        0.35, gt=0, le=1, description="Share of time_budget_ms a recall waits for its query"
        " embedding when the embedder is busy (many people asking at once; 105 ms of the"
        " default 300); past it, the lexical, temporal and entity channels recall without"
        " the dense one, and the vector still lands in the query cache.")
    journal: str = Field("journal.sqlite3",
                         description="Journal file, relative to server.data_dir.")
    accept_data_loss: bool = Field(
        False, description="Start even when memory data recorded in the data dir's"
        " manifest.json is missing or damaged (an empty, damaged or missing journal, a vector"
        " store without its memories): a damaged journal is moved aside, its readable"
        " exchanges copied into a new one, and the manifest rewritten. Off: refuse to start"
        " and say which file and how to proceed (`omoide serve --accept-data-loss` sets it"
        " for one start).")
    profile: ProfileSettings = Field(default_factory=ProfileSettings,
                                     description="The profile block (durable facts).")
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings,
                                           description="When and how facts are extracted.")
    index: IndexSettings = Field(default_factory=IndexSettings,
                                 description="Per-person indexes: memory budget and building.")

    @field_validator("engine")
    @classmethod
    def _one_spelling(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and info.data.get("retrieve") is not None:
            raise ValueError("`engine` is a shorthand for `retrieve: {use: NAME}`; give one"
                             " or the other")
        return v

    @property
    def retrieve_stage(self) -> StageSpec:
        """The read engine chosen (``retrieve``, else ``engine``, else ``robust``)."""
        if self.retrieve is not None:
            return self.retrieve
        return StageSpec(use=self.engine or DEFAULT_ENGINE)
