"""Facts that change: when a memory stops being true, and which one replaced it.

A year of memories holds states that change (a job, a home, a habit, a preference, a
medication) and plans that move or are called off. Extraction may link an update to
what it replaces (``Memory.superseded_by``), but often it does not; so validity is also
read from the memories themselves, bi-temporally as in Zep/Graphiti: a memory is valid
from when it was said until a newer one replaced it.

Two readings, both over grammar, never over particular nouns:

- **a slot** (:func:`slot_key`): a fact that fills a single-valued slot of someone (where
  they live, where they work) is replaced by a newer fact filling the same slot of the
  same someone;
- **a change said** (:func:`changes_in`): a fact that says what it replaced — 「Aから
  Bに変えた」, 「Aをやめて」, 「Aでは遊ばなくなった」, 「Aの代わりに」, 「Aをキャンセルした」,
  「Aが延期になった」 — replaces the older states and plans of the same someone that
  speak of A.

Only what lasts can be replaced (:func:`lasts`): a state, a habit, a plan. A one-off
event in the past stays true forever (「ジョギング中に足を痛めた」 is not undone by giving
up jogging).

May import only :mod:`omoide.memory.language` and the facts room before it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from omoide.memory.facts.profile import is_past, last_clause
from omoide.memory.language.canonical import canonical
from omoide.memory.language.lexicon import analyzer
from omoide.memory.language.word_classes import FIRST_PERSON, KIN_BY_READING

ChangeKind = Literal["replaced", "instead", "ended", "cancelled", "moved"]
PLAN_CHANGES: frozenset[ChangeKind] = frozenset({"instead", "cancelled", "moved"})
"""Changes that may call off or replace a plan, found by the names it shares."""


@dataclass(frozen=True)
class Change:
    """What a fact says it replaced: the words of the old value (each a set of
    alternative keys, all of which an older fact must hold) and how it changed."""

    kind: ChangeKind
    old_value: str
    keys: tuple[frozenset[str], ...]
    names: tuple[frozenset[str], ...] = ()
    """The names among ``keys`` (「軽井沢旅行」's 軽井沢): a plan is found by them alone."""


@dataclass(frozen=True)
class Validity:
    """When a memory was true: from ``valid_from`` until ``valid_until`` (None: still
    true), and which memory replaced it and why."""

    valid_from: datetime
    valid_until: datetime | None = None
    superseded_by: str | None = None
    """The first memory that replaced it (at ``valid_until``)."""
    why: str = ""
    latest_by: str | None = None
    """The newest memory that replaced it (a plan called off, then replaced by another:
    the other is what holds now)."""

    @property
    def current(self) -> bool:
        return self.superseded_by is None


# -- a change said ------------------------------------------------------------------
_PHRASE = r"([^、。「」『』はがを]{1,24}?)"
_NOT_A_TRIAL = r"(?!てみ|でみ)"
"""「変えてみたら」「止めてみた」 try something once; they change nothing that lasts."""
_LEADING_SUBJECT = re.compile(r"^あなた(?:の[^はが、。]{1,24}?)?[はが]、?")
_CHANGE_PATTERNS: tuple[tuple[ChangeKind, re.Pattern[str]], ...] = (
    # 「錠剤からシロップに変えて」「液晶タブレットからiPadに切り替えて」「朝1錠から朝晩の2回に」
    ("replaced", re.compile(_PHRASE + r"から(?!の)[^、。がをは]{1,30}?(?:に|へ)(?:変え|変わ|"
                            r"かえ|かわ|切り替え|切り替わ|切りかえ|替え|換え|乗り換え|変更|移|"
                            r"増や|減ら|増え|減っ)" + _NOT_A_TRIAL)),
    # 「自由曲を『…』に変更した」「部長を岡本くんに決めた」「担任は小島先生に変わった」
    # 「コーヒーを普通のものに戻した」
    ("replaced", re.compile(_PHRASE + r"(?:を|が|は)[^、。をがは]{1,30}?(?:に|へ)(?:変更|変え|"
                            r"変わ|かえ|かわ|替え|替わ|換え|切り替え|決め|決ま|戻し|戻っ|"
                            r"もどし|もどっ)" + _NOT_A_TRIAL)),
    # 「ジョギングをやめて」「会社を辞めた」「車を手放した」「ジムを退会した」
    ("ended", re.compile(_PHRASE + r"(?:を|は)(?:やめ|辞め|止め|卒業し|引退し|手放し|処分し|"
                         r"解約し|退会し|退部し|売っ|売り|譲っ|控え(?!よう))" + _NOT_A_TRIAL)),
    # 「電車のおもちゃでは遊ばなくなった」「コーヒーを飲まなくなった」
    ("ended", re.compile(_PHRASE + r"(?:では|には|とは|を|は)[^、。をはがでに]{1,8}?"
                         r"(?:なくなっ|なくなり|なくなる)")),
    # 「軽井沢の代わりに」
    ("instead", re.compile(_PHRASE + r"の(?:代わりに|かわりに)")),
    # 「軽井沢旅行をキャンセルした」「花火大会が中止になった」
    ("cancelled", re.compile(_PHRASE + r"(?:を|が|は)(?:キャンセル|中止|取りやめ|とりやめ|"
                             r"取り消|ドタキャン|見送)")),
    # 「運動会が…10月9日に延期になった」「長崎旅行を…に延期した」
    ("moved", re.compile(_PHRASE + r"(?:を|が|は)[^。]{0,40}?(?:延期|日程変更|繰り上げ|"
                         r"前倒し|ずらし|ずれ|延ばし|のばし|遅らせ|早め(?!に))")),
)
_HEAD_SPLIT = re.compile(r"の|と|や|から|で|、")


def _head(phrase: str) -> str:
    """The thing a phrase names: its last noun group (「颯太の保育園の運動会」 -> 運動会)."""
    phrase = re.sub(r"^(?:あなた(?:の[^はが]{0,12})?[はが]|[^はが]{0,12}は)", "", phrase)
    parts = [p for p in _HEAD_SPLIT.split(phrase) if p]
    return parts[-1] if parts else ""


def _noun_keys(phrase: str) -> tuple[tuple[frozenset[str], ...], tuple[frozenset[str], ...]]:
    """The nouns that end ``phrase`` (「機に軽自動車」 -> 軽自動車, 「軽井沢旅行」 -> 軽井沢 and
    旅行), each with its alternative keys; and the names among them."""
    if not phrase or not analyzer().available:
        return (), ()
    rest = canonical(phrase)
    nouns = [t for t in analyzer().analyse(rest, query=False).terms if t.weight >= 1.0]
    out: list[frozenset[str]] = []
    names: list[frozenset[str]] = []
    while rest:
        ending = [t for t in nouns if t.surface and rest.endswith(t.surface)]
        if not ending:
            break
        last = max(ending, key=lambda t: len(t.surface))
        rest = rest[:-len(last.surface)]
        if last.keys not in out:
            out.append(last.keys)
            if last.proper:
                names.append(last.keys)
    return tuple(out), tuple(names)


def changes_in(text: str) -> tuple[Change, ...]:
    """The changes a fact says it made (see the module doc); empty for most facts."""
    text = _LEADING_SUBJECT.sub("", canonical(text))
    out: list[Change] = []
    for kind, rx in _CHANGE_PATTERNS:
        for m in rx.finditer(text):
            value = _head(m.group(1))
            keys, names = _noun_keys(value)
            if keys and not any(c.old_value == value and c.kind == kind for c in out):
                out.append(Change(kind, value, keys, names))
    return tuple(out)


# -- what lasts --------------------------------------------------------------------
_DECIDED = re.compile(r"(?:ことにした|ことになった|ようにした|ようにしている|予約した|"
                      r"予約を入れた|申し込んだ|決めた|約束した|誘われた|始めた|ようになった|になった|引っ越した|入った)$")


_NEW_STATE: frozenset[ChangeKind] = frozenset({"replaced", "ended", "instead"})
"""A fact saying it replaced or gave up something (「コーヒーをやめて白湯にした」) states
what holds from then on."""


def lasts(text: str) -> bool:
    """Whether a fact states something that lasts or is still to come (a state, a
    habit, a plan, a decision), rather than a one-off event already past."""
    clause = last_clause(text)
    return not is_past(clause) or bool(_DECIDED.search(clause)) or \
        any(c.kind in _NEW_STATE for c in changes_in(text))


# -- a slot -------------------------------------------------------------------------
_WHO = r"^あなた(?:の([^はがも、。]{1,24}?)(?:さん)?)?[はがも]、?"
_SLOTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("residence", re.compile(_WHO + r"[^。]*(?:(?:住んで|暮らして)(?:いる|います|いて)|"
                             r"(?:住み|暮らし)始め(?:た|て|ました)?|一人暮らし[^、。]*(?:いる|いて)|在住(?:だ|で)|"
                             r"(?:に|へ)引っ越し(?:た|て)|(?:に|へ)移り住|"
                             r"(?:寮|下宿|施設|ホーム)」?に入(?:った|って)|(?:入居|入寮)し(?:た|て))"
                             r"(?:[、,。]|$)")),
    ("job", re.compile(_WHO + r"[^。]*(?:(?:働いて|勤めて|勤務して|営んで)(?:いる|います|いて)|"
                       r"(?:働き|勤め)始め(?:た|て|ました)?|の(?:社員|職員)(?:だ|で)|(?:に|へ)(?:転職|就職|入社)"
                       r"(?:した|して|する(?:ことにした|ことになった|予定だ))|"
                       # an occupation held: 「市営バスの運転手をしていて」, 「看護師をしている」
                       r"(?:[一-龥ァ-ヶー](?:(?<!相)手|師|士|員|官|医|者|(?<=先)生)|の仕事)を"
                       r"(?:して|やって)(?:いる|います|いて|いた)|"
                       # a part-time job: 「アルバイトをしている」「バイトを始めた」
                       r"(?:アルバイト|バイト)を(?:(?:して|やって)(?:いる|います|いて)|"
                       r"始め(?:た|て|ました)?|する(?:ことにした|ことになった)))"
                       r"(?:[、,。]|$)")),
    # where in the workplace: 「営業企画部に配属された」「物流システムのチームに異動になった」
    ("post", re.compile(_WHO + r"[^。]*(?:に|へ)(?:配属|異動|転属)(?:され|になっ|し)(?:た|て)")),
    # how they get there: 「自転車で通勤している」「車通勤をやめて自転車通勤にすることに決めた」
    ("commute", re.compile(_WHO + r"[^。]*(?:(?:通勤|通学)(?:して|しています|している)|"
                           r"(?:通勤|通学)に(?:する|した|して|なっ))")),
)


def slot_key(text: str) -> tuple[tuple[str, ...], str] | None:
    """Whose single-valued slot a fact fills, and which (``((), "job")`` for the person's
    own job, ``(("母",), "residence")`` for their mother's home), if any."""
    text = canonical(text)
    for name, rx in _SLOTS:
        m = rx.search(text)
        if m:
            who = m.group(1)
            return (tuple(p for p in who.split("の") if p) if who else ()), name
    return None


# -- a slot asked about ---------------------------------------------------------------
_NOT_A_TIME = r"(?![時曜日回分人年月歳個枚杯])"
_ASKED_SLOTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # 「どこに住んでるんだっけ」「どこ住んでたっけ」「引っ越し先どこ」「家ってどこだっけ」
    ("residence", re.compile(r"(?:どこ|何処)(?:に|で|へ)?(?:住ん|住み|暮らし|すん|引っ越し|"
                             r"ひっこし|引越し)|(?:どこ|何処)の(?:施設|ホーム|寮)|"
                             # 「母さんのいる施設の名前」: where someone is looked after
                             r"(?:いる|入って(?:い)?る|暮らして(?:い)?る)(?:施設|ホーム|寮)|"
                             r"(?:引っ越し先|引越し先|住まい|住所|家|"
                             r"住んで(?:い)?る(?:とこ|ところ))"
                             r"(?:って|は|、| )?(?:今|いま)?(?:どこ|何処)")),
    # 「どこで働いてる」「何の仕事してる」「仕事って何だっけ」「前の職場ってどこ」
    ("job", re.compile(r"(?:どこ|何処)(?:の[^、。はが]{1,6}?)?(?:で|に)?"
                       r"(?:働い|働き|勤め|勤務|はたらい|アルバイトし|バイトし)|"
                       r"(?:何|なん)の仕事|仕事(?:って|は|、| )?(?:何|なん)" + _NOT_A_TIME + "|"
                       r"(?:職場|勤め先|勤務先|勤め|会社|仕事場|仕事先)(?:って|は|、| )?"
                       r"(?:どこ|何処)|"
                       # 「俺の会社の名前なんだっけ」「うちの運送会社ってなんつったっけ」
                       r"(?:会社|職場|勤め先|勤務先)(?:の名前|(?:って|は)(?:何|なん)(?:て|つっ))")),
    # 「今の部署なんだっけ」「仕事、今何担当してるんだっけ」
    ("post", re.compile(r"(?:部署|所属|配属先|チーム)(?:って|は|、| )?(?:何|なん|どこ)|"
                        r"(?:何|なに|なん)(?:を|の)?担当")),
    # 「会社まで何で通ってるんだっけ」「通勤って何使ってる」
    # 「図書館まで何で行ってる？」: a way there that goes on (not 「何で行く？」, a trip's)
    ("commute", re.compile(r"(?:何|なに|なん)で(?:通っ|通勤|通学|かよっ|行って(?:い)?る)|"
                           r"(?:通勤|通学)(?:手段|方法)?(?:って|は|、| )?(?:何|なに|なん)")),
    # 「おじいちゃんって今どうしてるっけ」: how someone is doing, said last
    ("state", re.compile(r"(?:今|いま|最近)(?:は|って)?"
                         r"(?:どうして|どうなって|何して|なにして|元気)")),
)
STATE_OF_SOMEONE = "state"
"""The slot of :func:`asked_slot` that is no single fact: the latest lasting facts about
someone (「おじいちゃんって今どうしてるっけ」)."""
_ASKED_WHO = re.compile(r"^([^、。？?!！]{1,16}?)(?:って|は|の(?=仕事|職場|勤め|会社|家|住"
                        r"|引っ越し|引越し|いる|入って|暮らして))")
_MYSELF = frozenset({*FIRST_PERSON, "オレ", "うち", "今", "いま", "前", "まえ", "昔", "最近",
                     "結局"})
"""Topics that name no one but the speaker (俺って…, 今どこで…)."""


def _names_someone(topic: str) -> bool:
    """Whether a question's topic is nouns only (「弟」, 「友達の真希」), not a clause
    (「引っ越す前」) nor a time (「前」, 「昔」)."""
    if not analyzer().available:
        return True
    words = [w for w in analyzer().morphemes(topic)
             if w.part_of_speech()[0] not in ("補助記号", "空白")]
    return bool(words) and all(
        w.part_of_speech()[0] in ("名詞", "接尾辞", "接頭辞") or w.surface() == "の"
        for w in words) and not any(w.surface() in _MYSELF | _SLOT_WORDS for w in words)


_SLOT_WORDS = frozenset({"通勤", "通学", "仕事", "職場", "部署", "所属", "家", "住まい", "住所",
                         "勤め先", "勤務先", "会社", "担当"})
"""Words naming a slot, not someone (「通勤って何使ってる」 asks about the person's own)."""


def asked_slot(text: str) -> tuple[tuple[str, ...], str] | None:
    """The single-valued slot a question asks about and whose (see :func:`slot_key`):
    「今どこで働いてるんだっけ」 -> ``((), "job")``, 「弟ってどこに住んでるんだっけ」 ->
    ``(("弟",), "residence")``; None for anything else. The someone is the topic the
    question opens with (「弟って」, 「千夏の仕事」); the person themselves when it is
    them (俺, 私) or no one is named."""
    text = canonical(text)
    for name, rx in _ASKED_SLOTS:
        m = rx.search(text)
        if m is None:
            continue
        who = _ASKED_WHO.match(text[:m.end()])
        topic = who.group(1).strip() if who else ""
        if not topic or topic in _MYSELF or rx.match(topic) or not _names_someone(topic):
            return None if name == STATE_OF_SOMEONE else ((), name)
        return tuple(p for p in topic.split("の") if p and p not in _MYSELF), name
    return None


@functools.lru_cache(maxsize=4096)
def someone_key(word: str) -> str:
    """A word naming someone as recall compares it: its reading, a kin word as the kin it
    names (かみさん and 妻 are one wife, マキ and 真希 one name)."""
    reading = analyzer().reading_of(word) if analyzer().available else word
    return KIN_BY_READING.get(reading, reading)


def same_someone(asked: Sequence[str], told: Sequence[str]) -> bool:
    """Whether a question's someone (:func:`asked_slot`) is a fact's (:func:`slot_key`):
    both the person themselves, or a word of one naming a word of the other."""
    if not asked or not told:
        return not asked and not told
    return bool({someone_key(w) for w in asked} & {someone_key(w) for w in told})


def same_subject(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two facts' subjects (:attr:`~omoide.memory.facts.subject.Subject.names`)
    can be the same someone: both the person themselves, or one naming a part of the
    other (「息子の颯太」 and 「颯太」); 「同僚の佐藤」 and 「大家の佐藤」 are two people."""
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return sa == sb
    return sa <= sb or sb <= sa
