"""Profile memory: the durable facts about a person, always in the prompt, within a budget.

A memory is either **profile** (who the person is: allergies and health first, then
family and their names and dates, pets, home, work or school, strong likes and
dislikes, habits, the people around them) or **episodic** (a plan, an event, something
said once). Profile facts go into every prompt, most important first, until the
budget (``memory.profile.budget_chars``) is spent; a health or safety fact is never
dropped for space. Episodic memories are retrieved per turn. (Anchors: Letta/MemGPT
core memory blocks, ChatGPT's saved memories; ours is bounded, structured and
auditable: every profile line says which memory it is and why it is there.)

Who decides:

- Extraction asks the chat model for the decision; :func:`stored_kind` writes it into
  the memory's ``kind`` as ``profile_<category>`` (or the plain episodic kind, such as
  ``plan``). A person can set it by hand (``omoide memory profile set``).
- :func:`classify` checks that decision and decides when nobody did (memories written
  before, imports, ``omoide eval``): deterministic rules over the text. **A dated plan
  or event is never profile**, whatever the model said; a birthday or an anniversary
  (a date that comes back every year) is not an event.
- Among profile facts about the same single-valued thing (where the person lives, where
  they work), the newest supersedes the older ones (:func:`select_profile`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from datetime import date

# The contract types, re-exported for the modules that still import them from here.
from omoide.components.memory_types import Category as Category
from omoide.components.memory_types import Profile as Profile
from omoide.components.memory_types import ProfileFact as ProfileFact
from omoide.memory.language.absolute_dates import absolute_dates
from omoide.memory.language.block_text import escape_memory_text
from omoide.memory.language.canonical import canonical
from omoide.memory.language.temporal import resolve
from omoide.memory.language.word_classes import FAMILY, PEOPLE_AROUND, PETS
from omoide.types import Memory

LABELS_JA: dict[Category, str] = {
    Category.HEALTH: "健康", Category.FAMILY: "家族", Category.PET: "ペット",
    Category.BASICS: "住まい・基本", Category.WORK: "仕事・学校", Category.LIKE: "好み",
    Category.HABIT: "習慣", Category.PERSON: "周りの人"}

PROFILE_PREFIX = "profile_"
"""Kinds stay within the export format's ``[a-z_]`` (an import checks them)."""
EPISODIC_MARK = "episodic"
"""The kind of a memory a person took out of the profile (never classified again)."""
EPISODIC_KINDS = frozenset({"plan", "event", EPISODIC_MARK})
"""Kinds that make a memory episodic whatever its text."""


def stored_kind(kind: str, profile: bool | None, category: str | None = None) -> str:
    """The ``Memory.kind`` that records a profile decision.

    ``profile`` True -> ``profile_<category>`` (the category when it is known, else the
    category :func:`category_of_kind` reads from ``kind``); False -> ``kind`` itself
    (``plan``/``event``/...; a profile-only kind becomes ``other``); None -> ``kind``
    unchanged (the classifier decides later).
    """
    if profile is None:
        return kind
    if profile:
        cat = _category(category) or category_of_kind(kind)
        return PROFILE_PREFIX + (cat.value if cat else "other")
    return kind if kind not in ("profile",) and not kind.startswith(PROFILE_PREFIX) else "other"


def category_of_kind(kind: str) -> Category | None:
    """The category a kind names, if any (``profile_health`` -> health, ``habit`` -> habit)."""
    if kind.startswith(PROFILE_PREFIX):
        return _category(kind[len(PROFILE_PREFIX):])
    return {"preference": Category.LIKE, "habit": Category.HABIT,
            "person": Category.PERSON}.get(kind) or _category(kind)


def _category(name: str | None) -> Category | None:
    if not name:
        return None
    try:
        return Category(name.strip().lower())
    except ValueError:
        return None


@dataclass(frozen=True)
class Classification:
    """Profile or episodic, and why (shown by ``omoide memory profile show``)."""

    profile: bool
    category: Category | None
    reason: str


_verdict = functools.cache(Classification)
"""One shared instance per distinct verdict (an index holds one per memory)."""

# -- the rules -----------------------------------------------------------------------
# Kin, pets and people (FAMILY, PETS, PEOPLE_AROUND of word_classes): a fact whose subject
# is one of these (あなたの妻の…は) is about them.
# Health and safety: conditions, diets, medicines. Suffixes catch the names of conditions.
_HEALTH = re.compile(
    r"アレルギー|アレルギ|持病|[^\s、。]{1,6}(?:病|症)(?![院室棟])|高血圧|低血圧|血圧|血糖|"
    r"痛風|喘息|ぜんそく|腰痛|頭痛|偏頭痛|貧血|腎臓|肝臓|心臓|不整脈|通院|服用|処方|"
    r"薬を|薬は|薬の|食べられない|飲めない|食べない|飲まない|控え|ベジタリアン|ヴィーガン|"
    r"ビーガン|菜食|禁酒|禁煙|妊娠|障害|車椅子|補聴器|乳糖|グルテン|体質|お腹を(?:こわ|壊)|"
    r"リハビリ|治療中|(?:医者|医師)(?:に|から)(?:言われ|止められ|勧められ)|主治医|かかりつけ|"
    r"減塩|塩分|糖質")
_BASICS = re.compile(r"住んで|暮らして|暮らし|在住|出身|生まれ|引っ越し|マンション|アパート|"
                     r"一軒家|\d+\s*(?:歳|才)|誕生日")
_WORK = re.compile(
    r"働いて|勤めて|勤務|会社|職場|仕事|営業|社員|エンジニア|教師|教員|医師|看護師|薬剤師|"
    r"公務員|フリーランス|経営|店を|店の|自営|大学|高校|中学|小学|年生|学部|大学院|修士|博士|"
    r"学生|部活|[^\s、。]{1,4}部(?:で|に|の)|サークル|ゼミ|アルバイト|バイト|パート|退職|定年|"
    r"就職|在宅|職業|研究")
_LIKE = re.compile(r"好き|好物|苦手|嫌い|ファン|[^\s、。]派|目がない|ハマ|はまって|推し|興味|"
                   r"好み|お気に入り|愛用")
_HABIT = re.compile(r"毎朝|毎晩|毎日|毎週|毎月|毎年|いつも|よく|習慣|日課|趣味|通って|続けて|"
                    r"ようにして|ことにして|習って|練習|始めた|週に|月に|年に|平日|休日|休みの日")
# Dates that come back (a birthday is a fact about a person, not an event).
_RECURRING = re.compile(r"誕生日|記念日|命日|毎年|毎月|毎週|定休日|給料日")
# A plan or an intention without a date is still episodic (it happens once).
_PLAN_END = re.compile(r"(?:予定|つもり|予約|約束)(?:だ|です|をした|をしている|している)?$|"
                       r"(?:う|よう)と(?:考えて|思って|話して)いる$|を考えている$|迷っている$|"
                       r"(?:たい)と(?:思って|話して|考えて)いる$|検討している$")
_HEALTH_CONDITION = re.compile(
    r"(?:アレルギー|持病|[^\s、。]{1,6}(?:病|症)(?![院室棟]))(?:が|も)(?:ある|あり|あって|あります)")
"""A health condition stated as holding (「ペニシリンにアレルギーがあり、昔…」): lasting,
whatever past event the sentence goes on to tell."""
# A past one-off event; but a change of state (started, became, moved, joined) lasts.
_STATE_CHANGE = re.compile(r"(?:始めた|になった|ようになった|引っ越した|転職した|結婚した|"
                           r"入った|入会した|入学した|入社した|就職した|飼い始めた|なった)$")
_SUBJECT = re.compile(
    r"^あなたの(?:[^はがもをに、]{0,12}の)?([^はがもをに、]{1,12}?)(?:さん)?[はがも]")


def _sentence(text: str) -> str:
    return canonical(text).rstrip("。．.!！ ")


def last_clause(text: str) -> str:
    """The last clause of a fact (its main predicate), without the final mark."""
    return re.split(r"[、,]", _sentence(text))[-1]


_WEEKLY_LABEL = re.compile(r"曜|週末|土日")


def is_dated(text: str, said_on: date) -> bool:
    """Whether a fact is about a particular date or period (a plan or an event).

    Absolute dates count unless they come back every year (birthdays); relative
    expressions count, except weekdays and weekends in a habit (「毎週土曜に」
    「週末だけ」).
    """
    text = canonical(text)
    recurring = bool(_RECURRING.search(text))
    if absolute_dates(text, said_on):
        return not recurring
    spans = resolve(text, said_on, for_memory=True)
    if not spans:
        return False
    if recurring or _HABIT.search(text):
        return not all(_WEEKLY_LABEL.search(s.label) for s in spans)
    return True


def is_past(clause: str) -> bool:
    """Whether a clause ends in the past tense (した, 読んだ, 楽しかった; not the copula だ)."""
    from omoide.memory.language.lexicon import analyzer
    if not analyzer().available:
        return bool(re.search(r"(?:た|[んい]だ)$", clause))
    words = [w for w in analyzer().morphemes(clause)
             if w.part_of_speech()[0] not in ("補助記号", "空白")]
    return bool(words) and words[-1].part_of_speech()[0] == "助動詞" and \
        words[-1].normalized_form() == "た"


def _subject_category(text: str) -> Category | None:
    m = _SUBJECT.match(text)
    if m is None:
        return None
    head = text[len("あなたの"):m.end()]
    if any(p in head for p in PETS) or "飼" in head:
        return Category.PET
    if any(k in head for k in FAMILY):
        return Category.FAMILY
    if any(p in head for p in PEOPLE_AROUND):
        return Category.PERSON
    return None


def _topic_category(text: str, hint: Category | None) -> Category | None:
    if _HEALTH.search(text):
        return Category.HEALTH
    if "飼って" in text or "飼い" in text:
        return Category.PET
    subject = _subject_category(text)
    if subject is not None:
        return subject
    if hint is not None:
        return hint
    # The predicate says most (「仕事終わりにギターの練習をしている」 is a habit): the
    # last clause first, then the whole sentence.
    for part in (last_clause(text), text):
        for category, rx in ((Category.LIKE, _LIKE), (Category.HABIT, _HABIT),
                             (Category.BASICS, _BASICS), (Category.WORK, _WORK)):
            if rx.search(part):
                return category
    if re.search(r"(?:ている|でいる)$", _sentence(text)):
        return Category.HABIT
    if any(k in text for k in FAMILY):
        return Category.FAMILY
    return None


def classify(memory: Memory, said_on: date) -> Classification:
    """Profile or episodic for one memory (see the module doc for who decides)."""
    kind = memory.kind or ""
    text = canonical(memory.text)
    dated = is_dated(text, said_on)
    hint = category_of_kind(kind)
    if kind.startswith(PROFILE_PREFIX):
        if dated:
            return _verdict(False, None, "said profile, but it has a date: episodic")
        return _verdict(True, hint or _topic_category(text, None) or Category.HABIT,
                              "set as profile")
    if kind in EPISODIC_KINDS:
        return _verdict(False, None, f"extraction said {kind}")
    if dated:
        return _verdict(False, None, "a dated plan or event")
    last = last_clause(text)
    if _PLAN_END.search(last) or _PLAN_END.search(_sentence(text)):
        return _verdict(False, None, "a plan or an intention")
    if _HEALTH_CONDITION.search(text):
        return _verdict(True, Category.HEALTH, "a health condition that holds")
    if is_past(last) and not _STATE_CHANGE.search(last):
        return _verdict(False, None, "a past event")
    category = _topic_category(text, hint)
    if category is None:
        return _verdict(False, None, "not about a lasting trait")
    return _verdict(True, category, "a lasting fact")


# -- selection ---------------------------------------------------------------------
# Single-valued things about the person: a newer fact replaces an older one.
_SLOTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("residence", re.compile(r"^あなたは[^。]*(?:(?:住んで|暮らして)(?:いる|います|いて)|"
                             r"一人暮らし[^、。]*(?:いる|いて)|在住(?:だ|で))(?:[、,。]|$)")),
    ("job", re.compile(r"^あなたは[^。]*(?:(?:働いて|勤めて|勤務して)(?:いる|います|いて)|"
                       r"の(?:社員|職員)(?:だ|で))(?:[、,。]|$)")),
)


def slot_of(memory: Memory) -> str | None:
    """The single-valued slot a self-fact fills (``residence``, ``job``), if any."""
    text = canonical(memory.text)
    for name, rx in _SLOTS:
        if rx.search(text):
            return name
    return None


def line_text(fact: ProfileFact) -> str:
    """The text a fact takes in the block (what the budget counts)."""
    return f"[{LABELS_JA[fact.category]}] {escape_memory_text(fact.memory.text)}"


def select_profile(candidates: Iterable[ProfileFact], budget_chars: int) -> Profile:
    """Order, supersede and budget the profile facts.

    Most important category first, newest first within it; a newer fact about the same
    single-valued slot supersedes older ones; lines are kept while they fit in
    ``budget_chars`` (a fact that does not fit is skipped, later shorter ones may still
    fit), except safety facts, which are always kept.
    """
    ordered = sorted(candidates, key=lambda f: (f.priority, -f.memory.created_at.timestamp()))
    seen_slots: set[str] = set()
    live: list[ProfileFact] = []
    superseded: list[ProfileFact] = []
    for f in sorted(ordered, key=lambda f: -f.memory.created_at.timestamp()):
        slot = slot_of(f.memory)
        if slot is not None and f.category in (Category.BASICS, Category.WORK):
            if slot in seen_slots:
                superseded.append(f)
                continue
            seen_slots.add(slot)
        live.append(f)
    live.sort(key=lambda f: (f.priority, -f.memory.created_at.timestamp()))
    kept: list[ProfileFact] = []
    overflow: list[ProfileFact] = []
    used = sum(len(line_text(f)) for f in live if f.safety)
    for f in live:
        if f.safety:
            kept.append(f)
            continue
        size = len(line_text(f))
        if used + size <= budget_chars:
            kept.append(f)
            used += size
        else:
            overflow.append(f)
    return Profile(tuple(kept), tuple(overflow), tuple(superseded), budget_chars, used,
                   frozenset(f.memory.id for f in kept))


def with_relevant(profile: Profile, relevant: Collection[str]) -> Profile:
    """``profile`` with the overflow facts ``relevant`` to this turn brought in, in place
    of the least important facts that make room for them (safety facts always stay): the
    block is a view of the lasting facts, not a sink for the first that fit."""
    # (by position: a year of use leaves tens of thousands of overflow facts, and this
    # runs at every turn)
    positions = profile.overflow_positions
    at = sorted({positions[i] for i in relevant if i in positions})
    if not at:
        return profile
    wanted = [profile.overflow[i] for i in at]
    overflow: list[ProfileFact] = []
    start = 0
    for i in at:
        overflow += profile.overflow[start:i]
        start = i + 1
    overflow += profile.overflow[start:]
    kept = list(profile.facts)
    used = profile.chars
    for f in wanted:
        size = len(line_text(f))
        while used + size > profile.budget_chars:
            drop = next((k for k in reversed(kept) if not k.safety
                         and k.memory.id not in relevant), None)
            if drop is None:
                break
            kept.remove(drop)
            overflow.insert(0, drop)
            used -= len(line_text(drop))
        if used + size <= profile.budget_chars:
            kept.append(f)
            used += size
        else:
            overflow.append(f)
    return replace(profile, facts=tuple(kept), overflow=tuple(overflow), chars=used,
                   ids=frozenset(f.memory.id for f in kept))
