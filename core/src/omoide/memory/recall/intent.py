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
from typing import Any

from omoide.memory.language.canonical import to_katakana
from omoide.memory.language.lexicon import analyzer
from omoide.memory.language.word_classes import FIRST_PERSON, OUR_HOUSEHOLD, regex_alternation

# -- on the reading (katakana, no punctuation) -----------------------------------------
_RECALL_READING = re.compile(
    r"ッケ|オボエ[テトチ]|オボエル|ワスレ(?:タ|チャ)|イッテ(?:タ|マシ|ナカッ)|ハナシ(?:タ|テタ)|"
    r"オシエタ|ツタエタ|マエニ(?:イ|ハナ)|ヨテイ|ヤクソク|ヨウジ|スケジュール|"
    r"(?:タ|ダ|デシタ|ジャッ?タ)(?:カシラ|カナ|カノウ?|カネ|ッケ)|ダッタカ|デシタカ$|ジャッタ")
# A recogniser drops the small ッ: a WH question that ends in ダケ/タケ asked 〜っけ.
_LOST_KKE = re.compile(r"(?:ダ|タ|ダッタ)ケ$")
_ADVICE = re.compile(r"(?:バ|タラ|ダラ|ト)イイ|イイト(?:オモウ|オモイ)|ベキ|"
                     r"(?:ヨ|オ|ロ)ウカ(?:ナ|シラ)|シヨウ|ドウシヨウ|マヨッテ|(?:カナ|カシラ|カネ|カノウ?|カナア|カナー)$|"
                     r"(?:ナキャ|ナイト)$")
_QUESTION_END = re.compile(r"(?:ノ|カ|カイ|ノカ|カネ|カナ|カシラ|ッケ|ケ|デショ|デショウ|"
                           r"ダロ|ダロウ)$")
_REQUEST_END = re.compile(r"(?:テ|デ)(?:クレル|クレナイ|クダサイ|ホシイ|チョウダイ|ヨ|ネ)?$|"
                          r"ニシテ(?:クレル|クダサイ)?$")
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

# Words that ask (Sudachi normalised forms); 何か/なんか "something" does not ask.
_WH_WORDS = frozenset({"何処", "どこ", "誰", "だれ", "何時", "いつ", "如何", "どう", "何故", "なぜ",
                       "何で", "なんで", "どんな", "何の", "どの", "何れ", "どれ", "どっち", "何方",
                       "幾ら", "いくら", "幾つ", "いくつ", "どちら", "どれくらい", "どのくらい"})
_NOT_WH = frozenset({"何か", "なにか", "なんか", "何だか", "何て", "なんて", "何でも", "なんでも",
                     "何も", "なにも"})
_CONTROL_VERBS = frozenset({"消す", "点ける", "付ける", "止める", "掛ける", "流す", "鳴らす",
                            "起こす", "セット", "設定", "上げる", "下げる", "再生", "停止", "切る",
                            "閉める", "開ける", "小さい", "大きい", "弱める", "強める", "オン",
                            "オフ", "スキップ", "ミュート"})
_DEVICE_NOUNS = frozenset({"アラーム", "タイマー", "電気", "ライト", "照明", "音量", "ボリューム",
                           "音楽", "曲", "ラジオ", "テレビ", "エアコン", "目覚まし", "音", "明かり",
                           "電灯", "声"})


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
    markers: tuple[str, ...] = ()


def _words(text: str) -> list[Any]:
    if not analyzer().available:
        return []
    return [w for w in analyzer().morphemes(text)
            if w.part_of_speech()[0] not in ("補助記号", "空白")]


def _asks(words: list[Any], text: str) -> bool:
    for w in words:
        norm, surface = w.normalized_form(), w.surface()
        if surface in _NOT_WH or norm in _NOT_WH:
            continue
        if norm in _WH_WORDS or surface in _WH_WORDS:
            return True
        if surface[:1] == "何" or surface[:2] in ("なに", "なん"):
            return True     # 何, 何点, 何メートル, なんにち
    if not words:
        return bool(re.search(r"何(?!か)|いつ|どこ|誰|どう|なぜ|どんな", text))
    return bool(_WH_EN.search(text))


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
    self_ref = bool(_SELF.search(text))
    if self_ref and not recall:
        recall = True
        markers.append("self")
    if recall and _WORLD_FACT.search(text) and not self_ref and \
            not re.search(r"オボエ|ヨテイ|ヤクソク|イッテ(?:タ|マシ)", reading):
        recall = False
        markers.append("world fact")
    personal = self_ref or recall or bool(_ADVICE.search(reading))
    lemmas = {w.normalized_form() for w in words} | {w.surface() for w in words}
    request = bool(_REQUEST_END.search(reading))
    command = request and bool(lemmas & (_CONTROL_VERBS | _DEVICE_NOUNS)) and not recall
    asks_info = wh or bool(re.search(r"オシエテ", reading) and request) or \
        bool(words and words[-1].surface() in ("は", "とは")) or bool(_WORLD_FACT.search(text))
    general = asks_info and not personal and not command
    if general:
        markers.append("general")
    if command:
        markers.append("command")
    if personal and not recall:
        markers.append("personal")
    question = wh or bool(_QUESTION_END.search(reading)) or text.rstrip().endswith("?")
    past_action = _asks_what_was_done(words)
    return Intent(recall=recall,
                  calendar=bool(_CALENDAR.search(text)),
                  asks_when=bool(_ASKS_WHEN.search(text)),
                  general=general, command=command, personal=personal, question=question,
                  wh=wh, past_action=past_action, markers=tuple(markers))


_STATIVE = frozenset({"有る", "ある", "居る", "いる", "成る", "なる", "言う", "思う", "出来る"})


def _asks_what_was_done(words: list[Any]) -> bool:
    """The last verb is an action in the past tense (した, 行った), not ある/いる."""
    for i in range(len(words) - 1, -1, -1):
        pos = words[i].part_of_speech()
        if pos[0] == "動詞":
            if words[i].normalized_form() in _STATIVE or words[i].dictionary_form() in _STATIVE:
                return False
            return any(w.part_of_speech()[0] == "助動詞" and w.normalized_form() == "た"
                       for w in words[i + 1:i + 3])
    return False
