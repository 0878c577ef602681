"""Rule-based fact extraction: the stand-in's answer to the memory engine's JSON call.

The memory engine sends the conversation log inside ``<conversation>`` with one line per
message (``[2026-09-27 20:50 (日)] user: ...``) and expects
``{"facts": [{"text": ..., "kind": ..., "entities": [...]}]}``. A real chat model writes
those facts; this module does a small, honest imitation with rules:

- only user lines; questions, requests to the assistant, greetings, fillers and
  weather/news talk are skipped, recognised by grammar (:mod:`omoide_standins.speech_acts`:
  a final か／っけ, an interrogative word, a bare 「…ある」, a て-form or 〜てください, an
  interjection), so a question the recogniser wrote without 「？」 is still a question;
- each remaining sentence becomes one あなた-sentence: first person becomes あなた,
  casual endings become plain declaratives (行くんだ → 行く予定だ, 好きなんだ → 好きだ,
  練習してる → 練習している, 行きたいな → 行きたいと思っている);
- relative dates stay as said, with the absolute date in （） computed from the line's
  own timestamp (:mod:`omoide_standins.relative_dates`);
- a sentence with no content of its own (「また行きたいな」) continues the fact before it
  (「…美味しかったので、また行きたいと思っている。」);
- entities are the proper nouns Sudachi finds (箱根, 佐藤, USJ);
- each fact says whether it is a lasting profile fact, and its category, decided by
  omoide's deterministic classifier (:func:`omoide.api.profile_or_episodic`).

It handles everyday casual Japanese of the kind the reference's users speak; anything
it cannot rewrite confidently it leaves out rather than store a garbled memory.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from omoide.api import (
    CHILDREN,
    CLOSE_FAMILY,
    COMMON_PETS,
    FIRST_PERSON,
    FIRST_PERSON_PRONOUNS,
    FRIENDS,
    OUR_HOUSEHOLD,
    PARTNERS,
    WORKMATES,
    regex_alternation,
)
from omoide_standins.relative_dates import annotate_relative_dates
from omoide_standins.speech_acts import speech_act, strip_opening_interjections

_LINE = re.compile(
    r"^\s*\[(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})(?:[ T](?P<h>\d{1,2}):(?P<mi>\d{2}))?"
    r"[^\]]*\]\s*(?P<role>user|assistant|ユーザー|アシスタント)\s*[:：]\s*(?P<text>.*)$")
_CONVERSATION = re.compile(r"<conversation>(.*?)</conversation>", re.S)

_GREETINGS = ("こんにちは", "こんばんは", "おはよう", "おやすみ", "ありがとう", "ただいま",
              "いってきます", "行ってきます", "はじめまして", "よろしく", "またね", "じゃあね",
              "バイバイ", "さようなら", "お疲れ", "おつかれ", "すみません", "ごめん")
_OFF_TOPIC = ("天気", "気温", "湿度", "ニュース", "降水確率", "温度")
# Fillers count only when punctuation or a space follows (「あ、」 but not 「ありがとう」).
_FILLERS = re.compile(r"^(?:うん|ええと|えっと|えーと|あのね|あの|ねえ|ねぇ|そういえば|実は|じつは|"
                      r"まあ|まぁ|そうそう|あ|あっ|はい|いや|でも|それで|で|あとね|あと)"
                      r"(?:[、,\s！!…ー〜]+|$)")
# Reactions to what the assistant said; they say nothing about the user.
_REACTIONS = re.compile(r"^(?:それ|そう|あれ|これ|へえ|へー|ふーん|なるほど|確かに|たしかに|"
                        r"すごい|いいね|ほんと|本当|まじ|マジ|了解|わかった|分かった|"
                        r"ありがとう|よかった|良かった)")
# A sentence with no content of its own continues the fact before it only when it
# carries on the same thought (「また行きたいな」), never across unrelated lines.
_CONTINUATION = re.compile(r"^(?:また|もう一度|もう一回|いつか|次も|今度も)|たいと思っている$")
# A family member, pet or the like as the topic (猫のむぎは…, 弟が…) is the user's own.
_MY = "(?:" + OUR_HOUSEHOLD + "|" + regex_alternation(FIRST_PERSON_PRONOUNS) + "の)"
_POSSESSED = re.compile("^" + _MY + "?" + regex_alternation(
    (*CLOSE_FAMILY, *COMMON_PETS, "家族", *PARTNERS, *CHILDREN, *WORKMATES, "会社", "家"))
                        + r"(?:の[^、はがとにでを]{1,10})?[はがも]")
# Requests to the assistant (「10秒タイマー」「箱根のことは忘れて」) say nothing about the
# user; storing 「あなたは箱根のことは忘れて。」 would even bring back what was forgotten.
_REQUESTS = re.compile(r"(?:タイマー|アラーム|(?:忘れて|覚えて(?:おいて|て)?|覚えといて|起こして|"
                       r"教えて|つけて|消して|止めて|とめて|お願い|ください|ちょうだい)"
                       r"[ねよ]?[。！!]?$)")
_PROFILE_WORDS = re.compile(r"(?:住んで|働いて|勤めて|勤務|出身|歳|才|名前|職業|誕生日|"
                            r"引っ越|転職)")
_PERSON_WORDS = re.compile(regex_alternation((*CLOSE_FAMILY, *PARTNERS, *WORKMATES, *FRIENDS)))
_FIRST_PERSON = re.compile(regex_alternation(FIRST_PERSON) + "(?=[はがのもをにと])")
_QUESTION_END = re.compile(r"(?:[?？]|(?:か|かな|かしら|の|っけ|だっけ)[?？]?)$")
_INTERROGATIVE = re.compile(r"(?:何|なに|なん|いつ|どこ|誰|だれ|どう|なぜ|どんな|どれ|どっち|"
                            r"いくら)")
_PLAN_WORDS = re.compile(r"(?:明日|あした|明後日|あさって|来週|今度|次の|週末|来月|来年|予定|"
                         r"つもり|今夜|今晩|\d+日後)")
# 〜派 (蕎麦派, 朝型派) states a preference; 立派 does not.
_PREFERENCE_WORDS = re.compile(r"(?:好き|嫌い|苦手|美味し|おいし|うまかった|まずかった|気に入|"
                               r"ハマ|はまって|最高|大好物|(?<!立)派(?=だ|で|に|な|。|$))")
_HABIT_WORDS = re.compile(r"(?:最近|毎日|毎朝|毎晩|毎週|毎月|いつも|よく|習慣|ずっと|週に|日に)")


@dataclass(frozen=True)
class Utterance:
    """One user line of the log: what was said and when (in the speaker's local time)."""

    said_at: datetime
    text: str


@dataclass
class Fact:
    """One あなた-sentence with its kind, its profile decision and proper-noun entities."""

    text: str
    kind: str
    entities: list[str]
    profile: bool = False
    category: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "profile": self.profile,
                "category": self.category, "entities": self.entities}


def decide_profile(fact: Fact, said_at: datetime) -> Fact:
    """Profile or episodic, as the chat model is asked to say: the stand-in asks omoide's
    own deterministic classifier (a dated plan or event is never profile)."""
    from omoide.api import Memory, profile_or_episodic
    verdict = profile_or_episodic(Memory("standin", "standin", fact.text, said_at),
                                  said_at.date())
    fact.profile = verdict.profile
    fact.category = verdict.category.value if verdict.category else None
    return fact


def parse_conversation(prompt: str) -> list[Utterance]:
    """The user lines of the ``<conversation>`` block of ``prompt`` (none if absent).

    An answer to the assistant asking how something went (「箱根、どうだった？」, omoide's
    follow-up of a plan) is heard as about that thing: 「雨だったけど楽しかった」 reads
    「箱根は雨だったけど楽しかった」, so the fact names the plan it answers."""
    block = _CONVERSATION.search(prompt)
    if block is None:
        return []
    out: list[Utterance] = []
    asked: str | None = None
    for line in block.group(1).splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        if m.group("role") not in ("user", "ユーザー"):
            found = _HOW_WAS_IT.search(m.group("text"))
            asked = found.group(1) if found else None
            continue
        said_at = datetime(int(m.group("y")), int(m.group("mo")), int(m.group("d")),
                           int(m.group("h") or 0), int(m.group("mi") or 0))
        text = m.group("text").strip()
        if asked and asked not in text and not is_question(text):
            text = f"{asked}は{text}"
        asked = None
        out.append(Utterance(said_at, text))
    return out


_HOW_WAS_IT = re.compile(r"(?:^|[、。！？\s])([^、。！？\s]{1,16}?)、?(?:は|って)?どうだった[？?]")
"""The assistant asking how something went: 「そういえば、箱根、どうだった？」 -> 箱根."""


def split_sentences(text: str) -> list[str]:
    """Split at 。！？!? and newlines, keeping a question mark with its sentence."""
    parts = re.findall(r"[^。！？!?\n]+[？?]?", text)
    return [p.strip(" 　、,") for p in parts if p.strip(" 　、,")]


# A recogniser writes a spoken question with 「。」 or nothing (日本で一番高い山は。):
# a sentence that stops at its topic, or asks whether the assistant remembers, is a
# question however it is punctuated (「…って」 stays a statement: 結婚するって is news).
_SPOKEN_QUESTION_END = re.compile(r"(?:は|覚えてる|覚えている|覚えてます|知ってる)$")


def is_question(sentence: str) -> bool:
    s = sentence.rstrip("！!…ー〜。")
    if s.endswith(("?", "？")):
        return True
    if _SPOKEN_QUESTION_END.search(s):
        return True
    return bool(_QUESTION_END.search(s)) and bool(_INTERROGATIVE.search(s) or s.endswith("か"))


def _states(sentence: str, tokenizer: Any) -> bool:
    """Whether ``sentence`` states something (not a question, a request or a greeting):
    by its grammar with a tokenizer (:mod:`omoide_standins.speech_acts`), and always by
    its punctuation and a spoken question's ending (:func:`is_question`)."""
    act = speech_act(sentence, tokenizer)
    return act in (None, "statement") and not is_question(sentence)


def _is_small_talk(sentence: str) -> bool:
    bare = re.sub(r"[、,！!。\s〜ー…]", "", sentence)
    if len(bare) < 4:
        return True
    return any(bare.startswith(g) for g in _GREETINGS) and len(bare) <= 12


def _strip_fillers(sentence: str) -> str:
    previous = None
    while previous != sentence:
        previous = sentence
        sentence = _FILLERS.sub("", sentence, count=1)
    return sentence


def _is_past(sentence: str) -> bool:
    core = re.sub(r"(?:んだ|のだ|んです|よ|ね|な|わ|さ|ぞ|ぜ|なあ|なぁ)+$", "", sentence)
    return bool(re.search(r"(?:た|だった|でした|ました)$", core))


_FINAL_PARTICLES = re.compile(r"(?:よね|よな|ね|よ|な|なあ|なぁ|わ|さ|ぞ|ぜ|って|の)+$")
_EXPLANATORY = re.compile(r"(?:ん(?:です|だ)(?:けど|けれど)?|のだ)$")
# Casual or polite endings and their plain declarative form; the first that applies wins.
_ENDINGS: list[tuple[str, str]] = [
    (r"ています$", "ている"),
    (r"てます$", "ている"),
    (r"でいます$", "でいる"),
    (r"でした$", "だった"),
    (r"です$", "だ"),
    (r"てる$", "ている"),
    (r"でる$", "でいる"),
    (r"てた$", "ていた"),
    (r"ちゃった$", "てしまった"),
    (r"じゃった$", "でしまった"),
    (r"たい$", "たいと思っている"),
    (r"(?<=う)か$", "と思っている"),      # 行こうかな → 行こうか → 行こうと思っている
    (r"っていう$", "という"),
    (r"つもり$", "つもりだ"),
    (r"(?<=[^\W\d_])な$", "だ"),       # 好きなんだ → 好きな → 好きだ
]


def _plain_ending(sentence: str, plan: bool) -> str:
    """The sentence with a plain declarative ending (see ``_ENDINGS``)."""
    s = _FINAL_PARTICLES.sub("", sentence)
    s = _EXPLANATORY.sub("", s)
    for pattern, repl in _ENDINGS:
        new = re.sub(pattern, repl, s)
        if new != s:
            s = new
            break
    if plan and re.search(r"[うくぐすつぬぶむる]$", s) and not s.endswith(("ている", "でいる")):
        s += "予定だ"                    # 行く → 行く予定だ
    elif re.search(r"(?:好き|嫌い|苦手|大好き|元気|大変|暇|楽しみ)$", s):
        s += "だ"
    return s


def _kind(sentence: str, past: bool) -> str:
    if _PREFERENCE_WORDS.search(sentence):
        return "preference"
    if not past and _PLAN_WORDS.search(sentence):
        return "plan"
    if _PROFILE_WORDS.search(sentence):
        return "profile"
    if _HABIT_WORDS.search(sentence) or re.search(r"(?:ている|でいる)$", sentence):
        return "habit"
    if past:
        return "event"
    if _PERSON_WORDS.search(sentence):
        return "person"
    return "other"


def _with_subject(sentence: str) -> str:
    """Make あなた the subject: replace first person, or put 「あなたは」 in front."""
    s = _FIRST_PERSON.sub("あなた", sentence)
    if "あなた" in s:
        return s
    if _POSSESSED.match(s):             # 猫のむぎは3歳 → あなたの猫のむぎは3歳
        return "あなたの" + re.sub("^" + _MY, "", s)
    return "あなたは" + s


def _has_content(sentence: str, tokenizer: Any) -> bool:
    """Whether a sentence names something (a noun other than pronouns and time words)."""
    if tokenizer is None:
        return bool(re.search(r"[をにでがへと]", sentence))
    for m in tokenizer.tokenize(sentence):
        pos = m.part_of_speech()
        if pos[0] == "名詞" and pos[2] != "副詞可能" and pos[1] != "代名詞":
            return True
    return False


def _entities(sentence: str, tokenizer: Any) -> list[str]:
    if tokenizer is None:
        return []
    names: list[str] = []
    for m in tokenizer.tokenize(sentence):
        pos = m.part_of_speech()
        if pos[0] == "名詞" and pos[1] == "固有名詞" and m.surface() not in names:
            names.append(m.surface())
    return names


def _join_continuation(previous: Fact, continuation: str) -> str:
    """「…美味しかった。」 + 「また行きたいと思っている」

    → 「…美味しかったので、また行きたいと思っている。」
    """
    head = previous.text.rstrip("。")
    head = head[:-1] + "なので" if head.endswith("だ") else head + "ので"
    return f"{head}、{continuation}。"


def extract_facts(utterances: list[Utterance], tokenizer: Any = None) -> list[Fact]:
    """The facts about the user that the rules can read out of ``utterances``.

    ``tokenizer`` is a Sudachi tokenizer (for entities and the content check); without
    one, entities are empty and the content check falls back to particles.
    """
    facts: list[Fact] = []
    for utt in utterances:
        previous_in_line: Fact | None = None
        for raw in split_sentences(unicodedata.normalize("NFKC", utt.text)
                                   .replace("?", "？").replace("!", "！")):
            sentence = strip_opening_interjections(_strip_fillers(raw), tokenizer)
            if (not sentence or not _states(sentence, tokenizer) or _is_small_talk(sentence)
                    or _REACTIONS.match(sentence) or _REQUESTS.search(sentence)):
                continue
            if any(w in sentence for w in _OFF_TOPIC):
                continue
            past = _is_past(sentence)
            dated, _ = annotate_relative_dates(sentence, utt.said_at.date(), past=past)
            kind = _kind(dated, past)
            plain = _plain_ending(dated.rstrip("！!。…ー〜"), plan=kind == "plan")
            plain = (plain.replace("たんだけど、", "たところ、")
                     .replace("たんですけど、", "たところ、"))
            if not _has_content(plain, tokenizer):
                if not _CONTINUATION.search(plain):
                    continue
                if previous_in_line is None and facts:
                    previous_in_line = facts[-1]
                if previous_in_line is not None:
                    previous_in_line.text = _join_continuation(previous_in_line, plain)
                continue
            fact = Fact(_with_subject(plain) + "。", kind, _entities(sentence, tokenizer))
            facts.append(fact)
            previous_in_line = fact
    return facts


def facts_json(prompt: str, tokenizer: Any = None) -> str:
    """The JSON document the extraction call expects, from the prompt's conversation."""
    utterances = parse_conversation(prompt)
    facts = extract_facts(utterances, tokenizer)
    said_at = utterances[-1].said_at if utterances else datetime.now()
    facts = [decide_profile(f, said_at) for f in facts]
    return json.dumps({"facts": [f.to_json() for f in facts]}, ensure_ascii=False)

