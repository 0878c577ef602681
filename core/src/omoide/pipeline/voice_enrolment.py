"""Enrolment by voice, with consent: 「私は花子だよ。声を覚えて」.

A conversation of a few turns on one robot, answered by the core (never the chat model:
consent is not the model's to read):

1. **the request** (「声を覚えて」「声を登録して」): the robot says what it keeps (a
   voiceprint: numbers describing the voice, no recording), that it belongs to the person
   and can be erased, and asks for consent;
2. **consent**, read like every confirmation (:func:`omoide.pipeline.confirmation.read_answer`,
   within ``confirm_window_s``, from the voice that was asked): a clear yes asks for
   ``SENTENCES`` sentences, read one per turn; a no or anything unclear ends it;
3. **the sentences**: each utterance's audio is kept in memory until the last one, then
   the person is enrolled from them (``source="voice"``) and the robot says so, or says
   why not: too little usable voice, or sentences that do not sound like one voice and
   like the voice that asked (each pair's cosine under the encoder's
   ``min_consistency``: two voices no one enrolled are both "unknown" to
   identification). No audio is kept.

Spoofing rule: a voice may enrol only as the turn's own person — the household's default
person for a voice no one recognised, or the member it was identified as — and only when
that person has no voiceprint yet. A guest (no one's turn), a person already enrolled, or
a voice identified as another member mid-way is refused: enrolling or replacing anyone
else's voice needs the admin (the console or ``omoide voices enrol``).

None of these turns is journaled (the sentences read aloud are not things the person
said about themselves).
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from omoide.components.speaker import unit
from omoide.pipeline.confirmation import Answer, read_answer
from omoide.pipeline.turn import TurnRequest
from omoide.types import AudioClip
from omoide.voices.identifier import SpeakerIdentifier

ASKS = re.compile(r"(?:声|こえ)[をもは]?(?:覚え|おぼえ|登録|とうろく)")
"""「声を覚えて」「声を登録して」「僕の声も覚えてほしい」「こえをおぼえて」..."""

SENTENCES = ("今日はいい天気ですね。散歩に行きたいな。",
             "来週の土曜日に友達と箱根に行く予定です。",
             "晩ご飯はカレーにしようと思っているんだけど。")
"""What the person is asked to read, one per turn (about three seconds each)."""

CONSENT = ("声を覚えるね。その前に説明するね。覚えるのは、声の特徴を表す数字の並び、声紋だけで、"
           "録音は残さないよ。声紋はあなたのもので、いつでも消せるよ。声を登録してもいい？")
NEED_ADMIN_GUEST = ("ごめんね、誰の声として覚えればいいかわからないの。声の登録は、"
                    "管理者にコンソールかコマンドでお願いしてね。")
NEED_ADMIN_ENROLLED = ("あなたの声はもう覚えているよ。登録し直すのは、管理者にコンソールか"
                       "コマンドでお願いしてね。")
DECLINED = "わかった、声は覚えないでおくね。"
OTHER_VOICE = "さっきとは違う声みたい。声の登録はやめておくね。"


def read_this(index: int) -> str:
    first = "ありがとう。じゃあ、これから三つの文を一つずつ読んでね。一つ目。" if not index \
        else ("ありがとう。" + ("二つ目。" if index == 1 else "最後、三つ目。"))
    return f"{first}「{SENTENCES[index]}」"


@dataclass
class _Enrolling:
    """One robot's enrolment in progress."""

    person: str
    voice: str | None
    """The voice that asked (None: unknown, which is what a voice not enrolled is)."""
    expires_at: float
    asked: AudioClip | None = None
    """The utterance that asked (「声を覚えて」): the sentences must sound like it."""
    consented: bool = False
    clips: list[AudioClip] = field(default_factory=list)


@dataclass(frozen=True)
class EnrolmentReply:
    """What the robot says for an enrolment turn, and what the turn did."""

    text: str
    step: str
    """asked | declined | refused | reading | enrolled | failed | cancelled"""


class VoiceEnrolment:
    """Enrolment conversations, one per robot (see the module)."""

    def __init__(self, identifier: SpeakerIdentifier, *, window_s: float) -> None:
        self.identifier = identifier
        self.window_s = window_s
        self._open: dict[str, _Enrolling] = {}

    def in_progress(self, device: str | None) -> bool:
        """True while ``device`` has an enrolment waiting for its next answer."""
        state = self._open.get(device or "")
        return state is not None and state.expires_at >= time.monotonic()

    async def answer(self, request: TurnRequest, transcript: str) -> EnrolmentReply | None:
        """The robot's answer to this turn when it is part of an enrolment, else None
        (the turn goes on as usual). Only a household's audio turns on a device take
        part (a text turn has no voice to enrol)."""
        device = request.device
        if device is None or request.household is None or request.audio is None:
            return None
        state = self._open.pop(device, None)
        if state is not None and state.expires_at >= time.monotonic():
            return await self._go_on(device, state, request, transcript)
        if not ASKS.search(unicodedata.normalize("NFKC", transcript)):
            return None
        person = request.user if not request.guest else None
        if person is None:
            return EnrolmentReply(NEED_ADMIN_GUEST, "refused")
        if self.identifier.store.enrolled((person,), self.identifier.encoder.model_id):
            return EnrolmentReply(NEED_ADMIN_ENROLLED, "refused")
        self._open[device] = _Enrolling(person, _voice(request),
                                        time.monotonic() + self.window_s, request.audio)
        return EnrolmentReply(CONSENT, "asked")

    async def _go_on(self, device: str, state: _Enrolling, request: TurnRequest,
                     transcript: str) -> EnrolmentReply | None:
        if _voice(request) != state.voice or request.user != state.person:
            return EnrolmentReply(OTHER_VOICE, "cancelled")
        if not state.consented:
            answer = read_answer(transcript)
            if answer is Answer.UNCLEAR:
                return None   # not an answer: the turn is an ordinary one
            if answer is Answer.NO:
                return EnrolmentReply(DECLINED, "declined")
            state.consented = True
        elif request.audio is not None:
            state.clips.append(request.audio)
        if len(state.clips) < len(SENTENCES):
            state.expires_at = time.monotonic() + self.window_s
            self._open[device] = state
            return EnrolmentReply(read_this(len(state.clips)), "reading")
        return await self._enrol(state)

    async def _enrol(self, state: _Enrolling) -> EnrolmentReply:
        """Enrol from the sentences read, when they sound like one voice and like the
        voice that asked (each pair's cosine at least the encoder's ``min_consistency``:
        two voices no one has enrolled are otherwise alike to identification)."""
        encoder = self.identifier.encoder
        gathered = await self.identifier.embed_enrolment(state.clips)   # also in noise
        if not gathered.vectors:
            return EnrolmentReply("ごめんね、声がうまく聞き取れなかったみたい。静かなところで、"
                                  "もう一度「声を覚えて」って言ってね。", "failed")
        others = [unit(v) for v in gathered.vectors]
        if state.asked is not None:
            asked = await encoder.embed(state.asked)
            if asked.usable and asked.vector is not None:
                others.append(unit(asked.vector))
        rows = np.stack(others)
        if float((rows @ rows.T).min()) < encoder.config.min_consistency:
            return EnrolmentReply(OTHER_VOICE, "cancelled")
        self.identifier.keep(state.person, gathered, source="voice")
        return EnrolmentReply("覚えたよ！これからは、声であなただってわかるよ。", "enrolled")


def _voice(request: TurnRequest) -> str | None:
    """The member the turn's voice was identified as (None: unknown or not identified)."""
    return request.speaker.voice if request.speaker is not None else None
