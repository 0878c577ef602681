"""「そういうのは言わなくていいよ」: the person switches moments off by voice, confirmed.

Read from the turns' transcripts (the ``Heard`` event) soon after a moment was said to
that person: the next reply asks 「これからは、こっちから予定や誕生日の話をしないようにするね。
いい？」, and only a clear yes to that (:func:`omoide.pipeline.confirmation.read_answer`,
the same reading as forgetting a memory: anything not a clear yes is not a yes) switches
moments off for them in the ledger. The question and the answer are openers of the reply
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
RECENT = timedelta(minutes=30)
"""How soon after a moment 「そういうの」 can only mean moments."""

_STOP = re.compile(r"(?:そういう|そんな|それ|その話|そういうこと)(?:の|こと|話)?(?:は|って)?、?"
                   r"(?:もう|別に|わざわざ)?(?:言わ|いわ|話さ|はなさ|教えてくれ|知らせ)"
                   r"なくて(?:いい|大丈夫|だいじょうぶ|平気)")


def asks_to_stop(text: str) -> bool:
    """Whether an utterance asks omoide to stop saying such things."""
    return bool(_STOP.search(unicodedata.normalize("NFKC", text)))


@dataclass
class VoiceSwitch:
    """Who was asked to confirm, and the words the next reply opens with."""

    _asked: dict[str, datetime] = field(default_factory=dict)
    _say: dict[str, str] = field(default_factory=dict)

    def heard(self, person: str, text: str, now: datetime,
              last_moment_at: datetime | None) -> bool | None:
        """Read ``text``; True/False when it answered the question (switch off / keep),
        None otherwise. Sets what the reply opens with."""
        asked = self._asked.pop(person, None)
        if asked is not None and now - asked < RECENT:
            yes = read_answer(text) is Answer.YES
            self._say[person] = DONE if yes else KEPT
            return yes
        if last_moment_at is not None and now - last_moment_at < RECENT \
                and asks_to_stop(text):
            self._asked[person] = now
            self._say[person] = ASK
        return None

    def opener(self, person: str) -> str | None:
        return self._say.pop(person, None)
