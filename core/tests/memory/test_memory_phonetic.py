"""Matching by sound: recognisers mis-hear by sound, so the person's words are heard by sound."""

from __future__ import annotations

from omoide.memory.language.lexicon import analyzer
from omoide.memory.language.phonetic import SoundIndex, heard_as_a_name, phonemes, sound_key


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


def test_a_question_word_is_never_heard_as_a_word_of_the_person() -> None:
    """どこ folds to the sound of 東京 (トーキョー, long vowel and glide folded away): a
    pronoun the recogniser wrote is what was said."""
    assert heard({"東京": "tokyo"}, "前の店ってどこにあったっけ") == []
    assert heard({"東京": "tokyo"}, "ときょうって何しに行ったっけ") == ["tokyo"]


def heard_as_a_name_in(word: str, query: str) -> bool:
    a = analyzer().analyse(query, query=True)
    return heard_as_a_name(sound_key(analyzer().reading_of(word)), a.sound, a.noun_runs)


def test_a_name_is_heard_across_the_nouns_the_analyser_split_it_into() -> None:
    assert heard_as_a_name_in("県大会", "けんたい会の結果なんだったっけ")
    assert heard_as_a_name_in("胃カメラ", "いかめだっていつだっけ?")   # a guessed word and its last mora


def test_a_name_is_not_heard_in_a_noun_and_the_words_after_it() -> None:
    assert not heard_as_a_name_in("一日", "ピカソってどこの国の人だっけ?")   # ひと|だ
    assert not heard_as_a_name_in("築年", "月までの距離ってどのくらいだっけ")   # a light noun


def test_a_memory_word_is_found_in_the_reading_only_where_a_word_begins() -> None:
    assert not analyzer().analyse("もう寝るわ、おやすみー", query=True).begins_a_word("ヤスミ")
    assert not analyzer().analyse("夏目漱石の代表作", query=True).begins_a_word("ヒョウ")
    assert analyzer().analyse("だいきってどこ住んでるんだっけ", query=True).begins_a_word("ダイキ")


def test_a_word_the_person_uses_said_as_it_is_is_not_heard_as_another() -> None:
    assert heard({"新しい": "new", "働い": "work"}, "今どこで働いてるんだっけ") == ["work"]


def test_a_piece_of_a_longer_word_is_not_heard_as_a_word() -> None:
    assert heard({"話": "talk"}, "冬に早じまいした日あったよね") == []


def test_a_misheard_word_that_ends_with_the_query_word_is_still_heard() -> None:
    assert heard({"石垣島": "trip"}, "石が気じまって何が有名なの") == ["trip"]
