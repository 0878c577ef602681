"""Matching by sound: recognisers mis-hear by sound, so the person's words are heard by sound."""

from __future__ import annotations

from omoide.memory.language.lexicon import analyzer
from omoide.memory.language.phonetic import SoundIndex, phonemes, sound_key


def test_a_long_vowel_and_a_lost_glide_give_one_key() -> None:
    assert sound_key("シュウマツ") == sound_key("スウマツ")


def test_voicing_is_folded_away() -> None:
    assert sound_key("ゼミ") == sound_key("セミ")


def test_phonemes_keep_what_the_key_folds() -> None:
    assert phonemes("ゼミ") != phonemes("セミ")
    assert phonemes("ゴール") == "gooru"


def heard(vocabulary: dict[str, str], query: str) -> list[str]:
    index = SoundIndex()
    for word, mid in vocabulary.items():
        index.add(sound_key(analyzer().reading_of(word)), mid)
    a = analyzer().analyse(query, query=True)
    return sorted(mid for m in index.heard(a.sound, a.sound_starts, a.sound_bounds)
                  for mid in index.ids(m.key))


def test_a_misheard_place_is_heard_in_the_persons_vocabulary() -> None:
    assert heard({"石垣島": "trip"}, "石が気じまって何が有名なの") == ["trip"]


def test_a_misheard_name_of_a_thing_is_heard() -> None:
    assert heard({"ゴールデンウィーク": "gw"}, "ゴールで見行くってどこ行くんだっけ") == ["gw"]


def test_a_short_word_must_match_exactly() -> None:
    assert heard({"ムギ": "cat"}, "ムリの健康診断いつだっけ") == []


def test_a_word_is_never_assembled_across_words() -> None:
    assert heard({"ネコ": "cat"}, "ねえゴールってどこ") == []
