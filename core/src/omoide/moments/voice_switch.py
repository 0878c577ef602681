"""「そういうのは言わなくていいよ」: the person switches moments off by voice, confirmed —
and 「やっぱりまた予定のこと教えて」 switches them back on, confirmed too.

Read from the turns' transcripts (the ``Heard`` event). Soon after a moment was said to
that person, asking to stop makes the next reply ask 「これからは、こっちから予定や誕生日の
話をしないようにするね。いい？」; while moments are off for them, asking for them again
(a word for *again*, a word for moments, and a word for telling: never a plain
「もう一回言って」) makes it ask 「また、こっちから予定や誕生日の話をしてもいい？」. Only a
clear yes to the question (:func:`omoide.pipeline.confirmation.read_answer`, the same
reading as forgetting a memory: anything not a clear yes is not a yes) flips the switch
in the ledger. The questions and the answers are openers of the reply
(:meth:`omoide.pipeline.assistant.Assistant.openers`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from omoide.pipeline.confirmation import Answer, read_answer

ASK = "これからは、こっちから予定や誕生日の話をしないようにするね。いい？"
DONE = "わかった。もう自分からは言わないね。また聞きたくなったら言ってね。"
KEPT = "わかった、今のままにしておくね。"
ASK_AGAIN = "また、こっちから予定や誕生日の話をしてもいい？"
AGAIN = "わかった。また自分から声をかけるね。"
KEPT_OFF = "わかった、このまま自分からは言わないでおくね。"
RECENT = timedelta(minutes=30)
"""How soon after a moment 「そういうの」 can only mean moments (and how long a question
waits for its answer)."""

_STOP = re.compile(r"(?:そういう|そんな|それ|その話|そういうこと)(?:の|こと|話)?(?:は|って)?、?"
                   r"(?:もう|別に|わざわざ)?(?:言わ|いわ|話さ|はなさ|教えてくれ|知らせ)"
                   r"なくて(?:いい|大丈夫|だいじょうぶ|平気)")
_AGAIN_WORD = re.compile(r"また|やっぱり?|前みたいに|前のように")
_MOMENTS_WORD = re.compile(r"そういう|予定|誕生日|リマインド|自分から|そっちから|そちらから")
_TELL_WORD = re.compile(r"言って|いって|教えて|おしえて|話して|はなして|知らせて|声をかけて"
                        r"|声かけて")


def asks_to_stop(text: str) -> bool:
    """Whether an utterance asks omoide to stop saying such things."""
    return bool(_STOP.search(unicodedata.normalize("NFKC", text)))


def asks_to_resume(text: str) -> bool:
    """Whether an utterance asks omoide to speak first again (「やっぱりまた予定のこと
    教えて」): a word for again, one for moments and one for telling, not a stop."""
    text = unicodedata.normalize("NFKC", text)
    return (not asks_to_stop(text) and all(w.search(text) for w in
                                           (_AGAIN_WORD, _MOMENTS_WORD, _TELL_WORD)))


@dataclass
class VoiceSwitch:
    """Who was asked to confirm what, and the words the next reply opens with."""

    _asked: dict[str, tuple[datetime, bool]] = field(default_factory=dict)
    """Per person: when they were asked, and whether a yes switches moments off."""
    _say: dict[str, str] = field(default_factory=dict)

    def heard(self, person: str, text: str, now: datetime,
              last_moment_at: datetime | None, *, off: bool = False) -> bool | None:
        """Read ``text`` (``off``: moments are off for ``person`` now). Returns the
        switch's new state when it answered a question yes (True: off, False: on
        again), None otherwise. Sets what the reply opens with."""
        asked = self._asked.pop(person, None)
        if asked is not None and now - asked[0] < RECENT:
            to_off = asked[1]
            if read_answer(text) is Answer.YES:
                self._say[person] = DONE if to_off else AGAIN
                return to_off
            self._say[person] = KEPT if to_off else KEPT_OFF
            return None
        if not off and last_moment_at is not None and now - last_moment_at < RECENT \
                and asks_to_stop(text):
            self._asked[person] = (now, True)
            self._say[person] = ASK
        elif off and asks_to_resume(text):
            self._asked[person] = (now, False)
            self._say[person] = ASK_AGAIN
        return None

    def opener(self, person: str) -> str | None:
        return self._say.pop(person, None)
