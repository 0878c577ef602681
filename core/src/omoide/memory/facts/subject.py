"""Whom a memory is about, and which of its words its speaker says of themselves.

A quoted conversation turn (``Name: …``) is about its speaker, but not all of it: a
reaction to the listener's news ("That's great, Maria! Joining a church can be really
encouraging.") repeats the listener's words. A question that names one person ("Why
did John join a church?") must not be answered by John's reaction to Maria's news, so
the words a turn says only of its listener are kept apart (:attr:`Subject.listener_words`).

The split reads a turn sentence by sentence: a sentence in the first person is the
speaker's own; one that addresses the listener (second person, a question, a name
called out after a comma) is the listener's, and so are the sentences after it until
the speaker speaks of themselves again (a reaction runs on: "Wow, Caroline! That
painting is stunning."). Greetings and thanks ("Thanks, Dave!") open the speaker's own
news, not a reaction. Only English words are split this way; a Japanese turn keeps all
its words as its speaker's.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from omoide.memory.language.lexicon import Term, english_key, english_terms
from omoide.memory.language.word_classes import FIRST_PERSON_SEARCHED_ANYWHERE

_SPEAKER = re.compile(r"^([^\s:：]{1,40})\s?[:：]\s")
_JA_SUBJECT = re.compile(
    r"^あなたの((?:[^はがもをに、。]{1,12}の)?[^はがもをに、。]{1,12}?)(?:さん)?[はがも]")

_ADDRESSED = re.compile(r"\?\s*(?:\[[^\]]*\])?\s*$|(?:？|か。?|の？?)\s*$")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b|あなた|君|きみ", re.I)
# Looked for anywhere in a sentence, so only the spellings that are never part of
# another word (see FIRST_PERSON_SEARCHED_ANYWHERE).
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|me|mine|myself|we|our|us)\b|"
                           + "|".join(FIRST_PERSON_SEARCHED_ANYWHERE), re.I)
_CALLED_OUT = re.compile(
    r"^(?!\s*(?i:thanks|thank you|hey|hi|hello|sorry|yeah|yes|no)\b).*,\s*[A-Z][a-z]+\s*[!.?,]")
"""A name called out after a comma ("That's great, Maria!", "Wow, Caroline, look"),
except in a greeting or thanks, which open the speaker's own news."""
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


@dataclass(frozen=True)
class Subject:
    """Whom a memory is about: ``names`` (a turn's speaker, 「あなたの妹の遥は…」's 妹 and
    遥; none for the person themselves), whether it is a quoted ``turn`` (``Name: …``),
    whether that turn is the speaker talking about themselves (``own``: not a question
    to the other, not only "you"), and the ``listener_words`` it says only of the one
    it talks to (stemmed like the index's English keys)."""

    names: tuple[str, ...] = ()
    turn: bool = False
    own: bool = True
    listener_words: frozenset[str] = frozenset()

    def own_share(self, matched: Sequence[str]) -> float:
        """The share of ``matched`` (words a query shares with this memory) that its
        speaker says of themselves; 1 when nothing is the listener's."""
        if not self.listener_words or not matched:
            return 1.0
        own = [w for w in matched if english_key(w) not in self.listener_words]
        return len(own) / len(matched)


_NOBODY = Subject()


def subject_of(text: str) -> Subject:
    """Whom a memory is about (see :class:`Subject`)."""
    m = _SPEAKER.match(text)
    if m:
        said = text[m.end():]
        # News of one's own often ends with a question to the other ("…yesterday. Have
        # you tried it?"): only a turn with no first person at all is about the listener.
        asks_other = not _FIRST_PERSON.search(said) and bool(
            _ADDRESSED.search(said) or _SECOND_PERSON.search(said))
        return Subject((sys.intern(m.group(1).lower()),), True, not asks_other,
                       listener_words(said))
    m = _JA_SUBJECT.match(text)
    if m:
        return Subject(tuple(sys.intern(p) for p in m.group(1).split("の") if p))
    return _NOBODY


def listener_words(said: str) -> frozenset[str]:
    """The English words of a turn said only in sentences about its listener (see the
    module doc)."""
    own: set[str] = set()
    theirs: set[str] = set()
    to_listener = False
    for sentence in _SENTENCE_END.split(said):
        words = {k for t in english_terms(sentence) for k in t.keys}
        if _FIRST_PERSON.search(sentence):
            own |= words
            to_listener = False
        elif _SECOND_PERSON.search(sentence) or _ADDRESSED.search(sentence) or \
                _CALLED_OUT.search(sentence):
            theirs |= words
            to_listener = True
        elif to_listener:
            theirs |= words
        else:
            own |= words
    return frozenset(theirs - own)


def name_keys(term: Term) -> set[str]:
    """How a name in a query is written as a memory's subject: its keys, and its surface
    without a possessive (the light English stemmer makes "James" jam)."""
    surface = term.surface.lower()
    for possessive in ("'s", "’s"):
        surface = surface.removesuffix(possessive)
    return {k.lower() for k in term.keys} | {surface}
