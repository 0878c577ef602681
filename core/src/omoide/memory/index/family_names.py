"""The names a person gives their family (「姪の美羽」, 「義母の節子さん」): a question about
「姪っ子」 is about 美羽 too, in every memory that names her without saying she is the niece.

Learned from the memories themselves: a kin word that names one person
(:data:`~omoide.memory.language.word_classes.KIN_OF_ONE`) followed by の and a
name the analyser tagged as one (a proper noun), as in 「あなたの弟の拓真と姪の美羽が」.
"""

from __future__ import annotations

from collections.abc import Iterable

from omoide.memory.language.canonical import canonical
from omoide.memory.language.lexicon import Term
from omoide.memory.language.word_classes import KIN_OF_ONE as KIN_WORDS

__all__ = ["KIN_WORDS", "names_after"]


def names_after(kin: str, text: str, terms: Iterable[Term]) -> set[str]:
    """The keys of each name ``text`` gives right after 「``kin``の」 (its own proper-noun
    ``terms``, the longest that fits); empty when it names none."""
    text = canonical(text)
    names = sorted((t for t in terms if t.proper and t.surface), key=lambda t: -len(t.surface))
    found: set[str] = set()
    at = text.find(kin + "の")
    while at != -1:
        # 「母の」 inside 「義母の」 or 「祖母の」 is not the mother
        if at == 0 or text[at - 1] not in "義祖叔伯":
            rest = text[at + len(kin) + 1:]
            name = next((t for t in names if rest.startswith(t.surface)), None)
            if name is not None:
                found |= name.keys
        at = text.find(kin + "の", at + 1)
    return found
