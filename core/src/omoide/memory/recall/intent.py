"""What kind of utterance is this? (one signal for the read gate, never the gate alone)

The robust engine asks four questions of every utterance:

- ``recall``: does it refer to what the user told the assistant before (覚えてる,
  〜だっけ, 〜だったかな, 予定, 約束, 私の…)? Then weak evidence may inject.
- ``general``: is it a question about the world (「石垣島って何が有名なの」「日本の首都は」
  「作り方教えて」) with nothing personal in it? Then no episodic memory is injected,
  even one sharing a word with it: the reference's rule "don't bring memories up
  unasked", applied before the prompt. (The profile is in the prompt anyway.)
- ``command``: does it control the device (「電気消して」「明日6時半に起こして」)? Nothing.
- otherwise the utterance is about the user's own life, and a memory about the same
  entity, person, place, activity or time is injected (contextual recall).

Markers are read on the **reading** (katakana) as well as on the surface, so that
spelling does not matter (覚えて/おぼえて/憶えて are all オボエテ) and recognition
artefacts keep them: a WH question ending in だけ is a 〜っけ the recogniser lost (「次の
歯医者いつだけ」), 覚えている is 覚えてる said carefully. Punctuation plays no part.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from omoide.memory.language.canonical import to_katakana
from omoide.memory.language.lexicon import STOP_LEMMAS, TEMPORAL_READINGS, analyzer
from omoide.memory.language.tense import Tense, anchor, tense
from omoide.memory.language.word_classes import (
    DEICTIC_TIME_READINGS,
    FAMILIAR_NAME_SUFFIXES,
    FAMILY,
    FIRST_PERSON,
    KIN_BY_READING,
    KIN_OF_ONE,
    NAME_SUFFIXES,
    OUR_HOUSEHOLD,
    OUTING_STEMS,
    PEOPLE_AROUND,
    PETS,
    regex_alternation,
)

# -- on the reading (katakana, no punctuation) -----------------------------------------
_RECALL_READING = re.compile(
    r"ッケ|オボエ[テトチ]|オボエル|ワスレ(?:タ|チャ)|イッテ(?:タ|マシ|ナカッ)|ハナシ(?:タ|テタ)|"
    r"オシエタ|ツタエタ|マエニ(?:イ|ハナ)|ヨテイ|ヤクソク|ヨウジ|スケジュール|"
    r"(?:タ|ダ|デシタ|ジャッ?タ)(?:カシラ|カナ|カノウ?|カネ|ッケ|カイナ)|ダッタカ|デシタカ$|ジャッタ|"
    # 「冬に早じまいした日あったよね」: a past the speaker checks with the listener
    r"(?:タ|ダ|デシタ)(?:ヨネ|ヨナ)ー?$")
# A WH question ending in the past of the copula (だった, でした, やった in the west):
# asked to recall what one was told.
_RECOLLECTED = re.compile(r"(?:ダッタ|デシタ|ヤッタ|ジャッタ)(?:ケ|ノ|ン)?$")
# A recogniser drops the small ッ: a WH question that ends in ダケ/タケ asked 〜っけ.
_LOST_KKE = re.compile(r"(?:ダ|タ|ダッタ)ケ$")
_ADVICE = re.compile(r"(?:バ|タラ|ダラ|ト)イイ|イイト(?:オモウ|オモイ)|ベキ|"
                     r"(?:ヨ|オ|ロ)ウカ(?:ナ|シラ)|シヨウ|ドウシヨウ|マヨッテ|(?:カナ|カシラ|カネ|カノウ?|カナア|カナー)$|"
                     r"(?:ナキャ|ナイト)$")
_QUESTION_END = re.compile(r"(?:ノ|カ|カイ|ノカ|カネ|カナ|カシラ|ッケ|ケ|デショ|デショウ|"
                           r"ダロ|ダロウ)$")
_REQUEST_END = re.compile(r"(?:テ|デ)(?:クレル|クレナイ|クダサイ|ホシイ|チョウダイ|ヨ|ネ)?$|"
                          r"ニシテ(?:クレル|クダサイ)?$|[オゴヲ]?ネガイ(?:シマス|シタイ|ネ)?$|タノ(?:ム|ミマス)$")
# (お願い as a recogniser may write it: ご願い, を願い, 願い)
# -- on the surface (canonical text) -------------------------------------------------
_SELF = re.compile(regex_alternation(FIRST_PERSON) + r"(?:の|が|って|は|に|と|も)|"
                   + OUR_HOUSEHOLD)
_RECALL_EN = re.compile(
    r"^(?:when|what|where|who|whom|which|why|how|did|does|do|is|was|are|were|would|could|"
    r"has|have)\b|\b(?:remember|recall|did i|my|i told|i said|we talked)\b|"
    r"^(?:in|on|at|for|from|with|to|by|during|after|before|according to)\s+(?:what|which|"
    r"whose|how|when|where)\b", re.I)
# Questions about an attribute of the world (a test's full marks, a mountain's height)
# are general knowledge even with 〜だっけ, unless they also point at the user.
_WORLD_FACT = re.compile(r"満点|標高|人口|首都|面積|語源|由来|読み方|意味|何メートル|何キロ|"
                         r"何センチ|世界一|日本一|一番(?:高|大き|長|深|広|古)|とは")
_WH_EN = re.compile(r"^(?:what|where|who|whom|whose|which|why|how|when)\b", re.I)
_CALENDAR = re.compile(r"何曜|何日|なんにち|なんようび|何月")
_ASKS_WHEN = re.compile(r"いつ|何時|何日|何曜|なんじ|なんにち|なんようび|^when\b", re.I)
_ASKS_WHERE_TO = re.compile(r"(?:どこ|何処)(?:に|へ|まで|か)?[^。?？]{0,4}?"
                            + regex_alternation(("行", "いっ", "いく", *OUTING_STEMS)))

# Words that ask (Sudachi normalised forms); 何か/なんか "something" does not ask.
_WH_WORDS = frozenset({"何処", "どこ", "誰", "だれ", "何時", "いつ", "如何", "どう", "何故", "なぜ",
                       "何で", "なんで", "どんな", "何の", "どの", "何れ", "どれ", "どっち", "何方",
                       "幾ら", "いくら", "幾つ", "いくつ", "どちら", "どれくらい", "どのくらい"})
_NOT_WH = frozenset({"何か", "なにか", "なんか", "何だか", "何て", "なんて", "何でも", "なんでも",
                     "何も", "なにも"})
_CONTROL_VERBS = frozenset({"消す", "点ける", "付ける", "止める", "掛ける", "流す", "鳴らす",
                            "起こす", "セット", "設定", "上げる", "下げる", "再生", "停止", "切る",
                            "閉める", "開ける", "小さい", "大きい", "弱める", "強める", "オン",
                            "オフ", "スキップ", "ミュート", "リマインド",
                            # what the robot itself is asked to perform: 「何か歌でも歌って」
                            "歌う", "踊る"})
_DEVICE_NOUNS = frozenset({"アラーム", "タイマー", "電気", "ライト", "照明", "音量", "ボリューム",
                           "音楽", "曲", "ラジオ", "テレビ", "エアコン", "目覚まし", "音", "明かり",
                           "電灯", "声"})
_COMMAND_WORDS = _CONTROL_VERBS | _DEVICE_NOUNS
# the same without long-vowel marks, as a recogniser may drop them (タイマ for タイマー)
_COMMAND_WORDS_UNMARKED = frozenset(w.replace("ー", "") for w in _COMMAND_WORDS)
# The weather and what one takes against it (normalised forms): a question made only of
# these and of time words (「明日って晴れる?」「きょう傘いるかな」) is about the world,
# whatever plans that day holds. (The skills and stand-in plugins keep their own lists of
# weather and device words, so these are not a shared word class yet.)
_WEATHER = frozenset({"天気", "天候", "予報", "雨", "大雨", "小雨", "にわか雨", "雪", "晴れ",
                      "晴れる", "曇り", "曇る", "降る", "雷", "台風", "気温", "湿度", "降水",
                      "梅雨", "傘", "花粉", "黄砂"})
# A duration or a clock time a request counts down to (「10分たったら教えて」「5分後に呼んで」
# 「7時になったら知らせて」): a timer, whatever verb asks for it.
_COUNTDOWN = re.compile(r"(?:フン|プン|ビョウ|ジカン)(?:ゴ|アト|タッタラ|タテバ|シタラ|ケイカ|"
                        r"ハカッ|ハカリ|ハカル|カウント)|"
                        r"ジ(?:ハン)?(?:ニナッタラ|ニナレバ)")
# Recall markers that say "what I told you" by themselves; the others (〜っけ, 〜だったかな)
# only end a question, which a question about the world also does.
_TOLD = re.compile(r"オボエ[テトチ]|オボエル|ワスレ(?:タ|チャ)|イッテ(?:タ|マシ|ナカッ)|"
                   r"ハナシ(?:タ|テタ)|オシエタ|ツタエタ|マエニ(?:イ|ハナ)|ヨテイ|ヤクソク|ヨウジ|"
                   r"スケジュール")
_PEOPLE = frozenset(FAMILY) | frozenset(PEOPLE_AROUND) | frozenset(PETS)
_PERSONAL_TIME = frozenset(DEICTIC_TIME_READINGS) | frozenset(TEMPORAL_READINGS)


@dataclass(frozen=True)
class Intent:
    """``recall``: the utterance refers to the user's own memories.
    ``calendar``: it asks what day something is (「今日って何曜日」) — its own date
    words are the subject, not a date to look memories up by.
    ``asks_when``: it asks for a date or time, so dated memories answer it better.
    ``general``: a question or request about the world, with nothing personal in it.
    ``command``: it controls the device.
    ``personal``: it speaks of the user's own situation (first person, advice for
    themselves, wondering aloud: 〜かな, 〜ればいい).
    ``question``: it asks something (a question word, a question ending such as 〜の,
    〜か, 〜ますか; a question mark is one more sign, never the only one needed).
    """

    recall: bool
    calendar: bool
    asks_when: bool
    general: bool = False
    command: bool = False
    personal: bool = False
    question: bool = False
    wh: bool = False
    """It asks with a question word (何, どこ, いつ; what, where, who...)."""
    past_action: bool = False
    """It asks what the user *did* (した, 行った, 作った; not あった or だった, which
    Japanese also uses to recall plans): a bare weekday then means the last one."""
    asks_where_to: bool = False
    """It asks where the user went (「夏休みどこ行ったっけ」): a memory of going out
    answers it better than anything else in the weeks it names."""
    impersonal: bool = False
    """It is shaped like recall only by its ending (〜だっけ) and has nothing of the user
    in its grammar (「1ガロンって何リットルだっけ」): like a remark, it needs a memory
    sharing a whole word with it (as said or as heard), not a fragment (国 of 韓国)."""
    thing_named: bool = False
    """A recall-shaped question about a thing it names as its topic (「名古屋城って誰が
    建てたんだっけ」, 「エスプレッソって何気圧で淹れるんだっけ」): nothing of the user in
    it, and no action of theirs asked about (an action whose doer is asked is someone
    else's). A memory answers it only by sharing what it asks beyond the topic."""
    markers: tuple[str, ...] = ()


def _words(text: str) -> list[Any]:
    if not analyzer().available:
        return []
    return [w for w in analyzer().morphemes(text)
            if w.part_of_speech()[0] not in ("補助記号", "空白")]


def _asks(words: list[Any], text: str) -> bool:
    for i, w in enumerate(words):
        norm, surface = w.normalized_form(), w.surface()
        if surface in _NOT_WH or norm in _NOT_WH or _indefinite(words, i):
            continue
        if norm in _WH_WORDS or surface in _WH_WORDS:
            return True
        if surface[:1] == "何" or surface[:2] in ("なに", "なん"):
            return True     # 何, 何点, 何メートル, なんにち
    if not words:
        return bool(re.search(r"何(?!か)|いつ|どこ|誰|どう|なぜ|どんな", text))
    return bool(_WH_EN.search(text))


def _asked(text: str) -> bool:
    """Said as a question: a question mark, or no mark at all (a recogniser writes none)."""
    return not text.rstrip().endswith(("。", "!", "！"))


def _indefinite(words: list[Any], i: int) -> bool:
    """The word at ``i`` followed by the particle か or も (何も, なんか, 誰か, どこも, when
    the analyser splits them) is "nothing", "somehow", "someone": it asks nothing."""
    after = words[i + 1] if i + 1 < len(words) else None
    return after is not None and after.surface() in ("か", "も") and \
        after.part_of_speech()[0] == "助詞" and words[i].part_of_speech()[0] == "代名詞"


def detect(text: str) -> Intent:
    """Classify a canonical utterance (see :func:`omoide.memory.language.canonical.canonical`)."""
    words = _words(text)
    reading = "".join(to_katakana(w.reading_form()) for w in words) if words else \
        to_katakana(text)
    markers: list[str] = []
    wh = _asks(words, text)
    recall = bool(_RECALL_READING.search(reading) or _RECALL_EN.search(text))
    if recall:
        markers.append("recall")
    elif (wh or "ッテ" in reading) and _LOST_KKE.search(reading):
        # 「…っていつだっけ」 heard as 「…って位置からだけ」: a topic and a final だけ.
        recall = True
        markers.append("lost っけ")
    elif wh and _RECOLLECTED.search(reading) and _asked(text):
        # 「忘年会って何日だった？」「会場どこやった？」: the past of what one knew, not of
        # what happened (the party may be next week)
        recall = True
        markers.append("recollected")
    self_ref = bool(_SELF.search(text))
    if self_ref and not recall:
        recall = True
        markers.append("self")
    past_action = _asks_what_was_done(words)
    if not recall and wh and past_action and _at_a_time_of_theirs(words) and \
            not _asks_the_doer(words):
        # 「去年のクリスマスイブって何してた?」: what was done at a time counted from the
        # speaker's now, with no one else doing it, is what they did
        recall = True
        markers.append("own past")
    if recall and _WORLD_FACT.search(text) and not self_ref and \
            not re.search(r"オボエ|ヨテイ|ヤクソク|イッテ(?:タ|マシ)", reading):
        recall = False
        markers.append("world fact")
    elif not recall and _WORLD_FACT.search(text) and not self_ref:
        markers.append("world fact")   # (asked without っけ: an attribute of the world too)
    impersonal = recall and not self_ref and _about_a_thing(words, reading, text)
    if impersonal:
        markers.append("about a thing")
    weather = not self_ref and not _TOLD.search(reading) and _only_weather(words)
    if weather:
        recall = impersonal = False
        markers.append("weather")
    still = _asks_if_still(words, text)
    if still:
        markers.append("still")
    personal = self_ref or still or (recall and not impersonal) or _their_person(words) or \
        (bool(_ADVICE.search(reading)) and not weather)
    request = bool(_REQUEST_END.search(reading))
    command = not recall and _commands(words, reading, request)
    asks_info = wh or weather or bool(re.search(r"オシエテ", reading) and request) or \
        bool(words and words[-1].surface() in ("は", "とは")) or bool(_WORLD_FACT.search(text))
    general = asks_info and not personal and not command
    if general:
        markers.append("general")
    if command:
        markers.append("command")
    if personal and not recall:
        markers.append("personal")
    question = wh or bool(_QUESTION_END.search(reading)) or text.rstrip().endswith("?")
    # (asked in the past tense, 「県大会って結果どうだったっけ」 is about an event of theirs,
    # unless someone else is asked to have done it: 「名古屋城って誰が建てたんだっけ」)
    # (a recall read from a garbled ending, 「…って位置からだけ」, may hide いつ)
    thing_named = recall and "lost っけ" not in markers and not self_ref and not weather and \
        not still and \
        _names_a_thing_as_topic(words, reading, text) and \
        (_asks_the_doer(words) or not (past_action or tense(text) is Tense.PAST))
    if thing_named:
        markers.append("a thing named")
    return Intent(recall=recall,
                  calendar=bool(_CALENDAR.search(text)),
                  asks_when=bool(_ASKS_WHEN.search(text)),
                  asks_where_to=bool(_ASKS_WHERE_TO.search(text)),
                  general=general, command=command, personal=personal, question=question,
                  wh=wh, past_action=past_action, impersonal=impersonal,
                  thing_named=thing_named, markers=tuple(markers))


def _commands(words: list[Any], reading: str, request: bool) -> bool:
    """A request that operates the device (「電気消して」「タイマーお願い」) or counts down
    to a time (「10分たったら教えて」)."""
    if not request:
        return False
    lemmas = {w.normalized_form() for w in words} | {w.surface() for w in words}
    return bool(lemmas & _COMMAND_WORDS) or bool(lemmas & _COMMAND_WORDS_UNMARKED) or \
        bool(_COUNTDOWN.search(reading))


def _content(word: Any) -> bool:
    pos = word.part_of_speech()
    return (pos[0] == "名詞" and (pos[1] == "固有名詞" or
                                 (pos[1] == "普通名詞" and pos[2] != "副詞可能"))) or \
        (pos[0] in ("動詞", "形容詞") and pos[1] == "一般")


def _only_weather(words: list[Any]) -> bool:
    """The utterance speaks of the weather and of nothing but time besides
    (「今週末って雨降るかな」; not 「週末のBBQ雨降るかな」, which is about the BBQ)."""
    weather = False
    for w in words:
        if w.normalized_form() in _WEATHER or w.surface() in _WEATHER:
            weather = True
        elif _content(w) and w.normalized_form() not in STOP_LEMMAS and \
                to_katakana(w.reading_form()) not in TEMPORAL_READINGS:
            return False
    return weather


_JAPANESE_KANA = re.compile(r"[\u3041-\u30ff]")


def _about_a_thing(words: list[Any], reading: str, text: str) -> bool:
    """A question shaped like recall only by its ending (〜だっけ, 〜だったかな) that has
    nothing of the speaker in its grammar: no "you told me" (覚えてる, 言ってた, 予定), no
    person of theirs (kin, friends, pets, a name with さん), no time counted from their
    now (去年, この前, 今, 次), and no verb of something done, except one whose doer is
    what is asked (「モナリザ描いたのって誰だっけ」). 「うるう年って4年に1回だっけ」 asks
    about the world; 「県大会の結果なんだったっけ」 too by its grammar, and only a memory
    naming the thing itself answers it (see the read gate)."""
    if not words or not _JAPANESE_KANA.search(text) or _TOLD.search(reading) or \
            anchor(text) is not None:
        return False
    for i, w in enumerate(words):
        norm, surface, pos = w.normalized_form(), w.surface(), w.part_of_speech()
        if norm in _PEOPLE or surface in _PEOPLE or \
                to_katakana(w.reading_form()) in KIN_BY_READING or \
                (pos[0] == "接尾辞" and surface in NAME_SUFFIXES) or \
                to_katakana(w.reading_form()) in _PERSONAL_TIME:
            return False
        if pos[0] == "動詞" and norm not in _STATIVE and w.dictionary_form() not in _STATIVE \
                and not _doer_asked(words, i) and not _done_by_the_one_described(words, i):
            return False
    return True


def _asks_if_still(words: list[Any], text: str) -> bool:
    """A question asking whether something still goes on (「青窓堂ってまだ行ってるっけ」
    「習い事まだスイミング？」「今もランニングしてる？」): about the speaker's life as it
    is now, which the newest memory of it answers (it may tell that it stopped)."""
    asks = text.rstrip().endswith(("?", "？", "っけ", "かな", "よね"))
    return asks and (any(w.normalized_form() == "未だ" and w.part_of_speech()[0] == "副詞"
                         for w in words) or bool(_NOW_TOO.search(text)))


_NOW_TOO = re.compile(r"(?:^|[、\s])(?:今|いま)も|"
                      r"[^\s、]{2}(?:って|は|、|\s)(?:今|いま)(?:は|って|(?=何|なに|なん|どこ))")
"""「今もランニングしてる？」「スマホ教室、今も木曜？」: still, said from now;
「読み聞かせ、今は何曜？」「パート、今何曜日に入ってる？」: how a thing named stands now
(not 「今は何時？」, which names nothing)."""


def _their_person(words: list[Any]) -> bool:
    """A person of the speaker's own, named as one speaks of one's own: a kin word of
    one person standing alone before a particle (「弟の誕生日何日？」「母さんの手術いつ？」;
    not 母の日, one word) or a given name with ちゃん / くん (「亜紀ちゃんの式、何日？」). A
    question about them is about the speaker's life, not about the world."""
    for w, after in pairwise(words):
        pos = w.part_of_speech()
        kin = w.normalized_form() in KIN_OF_ONE or w.surface() in KIN_OF_ONE or \
            to_katakana(w.reading_form()) in KIN_BY_READING
        if kin and pos[1] == "普通名詞" and after.part_of_speech()[0] == "助詞":
            return True
        if pos[2] == "人名" and after.surface() in FAMILIAR_NAME_SUFFIXES:
            return True
    return False


def _names_a_thing_as_topic(words: list[Any], reading: str, text: str) -> bool:
    """A topic set with って and nothing of the speaker around it: no "you told me", no
    person of theirs, no time counted from their now, no この前/初めて (see
    :func:`_about_a_thing`, whose verbs this leaves to the caller)."""
    if not words or "って" not in text or _TOLD.search(reading) or anchor(text) is not None:
        return False
    return not any(w.normalized_form() in _PEOPLE or w.surface() in _PEOPLE or
                   to_katakana(w.reading_form()) in KIN_BY_READING or
                   (w.part_of_speech()[0] == "接尾辞" and w.surface() in NAME_SUFFIXES) or
                   to_katakana(w.reading_form()) in _PERSONAL_TIME or
                   (w.surface() in _ROUTINE_TIMES and _HABITUAL.search(text)) for w in words)


_ROUTINE_TIMES = frozenset({"朝", "昼", "夜", "晩", "夕方", "毎朝", "毎晩", "毎日", "平日", "休日",
                            "寝る前", "あさ", "よる", "ばん"})
"""Times of the speaker's day: 「朝って何飲んでるんだっけ」 asks about their habit."""
_HABITUAL = re.compile(r"(?:て|で)(?:る|いる|た|いた)(?:ん|の)?(?:だ|だっ)?(?:っけ|け)")
"""A doing that goes on (飲んでるんだっけ, してたっけ), asked with っけ."""


def _doer_asked(words: list[Any], i: int) -> bool:
    """The verb at ``i`` is made a noun (〜たの) whose doer the question asks (〜って誰)."""
    after = [w.surface() for w in words[i + 1:]]
    return "の" in after[:3] and any(w in ("誰", "だれ") for w in after)


def _done_by_the_one_described(words: list[Any], i: int) -> bool:
    """The verb at ``i`` says what someone described did, and the question asks what
    (「何した人」「何を作った人」): the one the topic names did it, not the speaker."""
    before = [w.surface() for w in words[max(0, i - 2):i]]
    asked = before[-1:] == ["何"] or before == ["何", "を"]
    after = words[i + 1:i + 3]
    for w in after:
        if w.part_of_speech()[0] == "助動詞":
            continue
        return asked and w.surface() in _ONE_DESCRIBED
    return False


_ONE_DESCRIBED = frozenset({"人", "ひと", "方"})
"""A person a verb before it describes (何した人: the person who did what)."""

_STATIVE = frozenset({"有る", "ある", "居る", "いる", "成る", "なる", "言う", "思う", "出来る"})


def _at_a_time_of_theirs(words: list[Any]) -> bool:
    """A time counted from the speaker's now (去年, 先週, この前, 昨日) is named."""
    return any(to_katakana(w.reading_form()) in _PERSONAL_TIME for w in words)


def _asks_the_doer(words: list[Any]) -> bool:
    """Someone other than the speaker does it: a question word or a name is its subject
    (「昨日の試合どっちが勝った」「去年誰が優勝した」)."""
    for w, after in pairwise(words):
        if after.surface() == "が" and (w.normalized_form() in _WH_WORDS or
                                        w.surface() in _WH_WORDS or
                                        w.part_of_speech()[1] == "固有名詞"):
            return True
    return False


def _asks_what_was_done(words: list[Any]) -> bool:
    """The last verb is an action in the past tense (した, 行った, していた), not ある/いる."""
    for i in range(len(words) - 1, -1, -1):
        pos = words[i].part_of_speech()
        if pos[0] == "動詞":
            past = any(w.part_of_speech()[0] == "助動詞" and w.normalized_form() == "た"
                       for w in words[i + 1:i + 3])
            verb = words[i - 2] if _aspect_after_te(words, i) else words[i]
            if verb.normalized_form() in _STATIVE or verb.dictionary_form() in _STATIVE:
                return False
            return past
    return False


def _aspect_after_te(words: list[Any], i: int) -> bool:
    """The verb at ``i`` is the いる / おる of a verb's ～ていた (し|て|い|た): its aspect,
    the verb before て the doing."""
    return i >= 2 and words[i].part_of_speech()[1] == "非自立可能" and \
        words[i].normalized_form() in ("居る", "いる", "おる") and \
        words[i - 1].surface() in ("て", "で") and words[i - 2].part_of_speech()[0] == "動詞"
