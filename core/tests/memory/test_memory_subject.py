"""Whose words a conversation turn carries: its speaker's own news, or its listener's."""

from __future__ import annotations

from omoide.memory.facts.subject import name_keys, subject_of
from omoide.memory.language.lexicon import Term, english_key


def test_a_reaction_to_the_listeners_news_carries_the_listeners_words() -> None:
    turn = subject_of("John: That's great, Maria! Joining a church can be really "
                      "encouraging. I'm thrilled for you.")
    assert turn.names == ("john",) and turn.own
    assert {english_key(w) for w in ("Joining", "church", "encouraging")} <= \
        turn.listener_words
    assert english_key("thrilled") not in turn.listener_words


def test_thanks_open_the_speakers_own_news() -> None:
    turn = subject_of("Calvin: Thanks, Dave! That show in Tokyo was awesome! Everyone was "
                      "so into it when I played one of my songs.")
    assert turn.listener_words == frozenset()


def test_a_question_to_the_listener_is_theirs_and_news_in_the_first_person_is_the_speakers(
        ) -> None:
    turn = subject_of("Evan: I finally fixed my old bike. How is your new guitar going?")
    assert english_key("guitar") in turn.listener_words
    assert english_key("bike") not in turn.listener_words


def test_a_word_the_speaker_also_says_of_themselves_stays_theirs() -> None:
    turn = subject_of("Jolene: Your yoga class sounds fun! I do yoga every morning.")
    assert english_key("yoga") not in turn.listener_words
    assert english_key("class") in turn.listener_words


def test_own_share_counts_the_query_words_the_speaker_says_of_themselves() -> None:
    turn = subject_of("John: That's great, Maria! Joining a church can be really "
                      "encouraging. I'm thrilled for you.")
    assert turn.own_share(("church", "Joining")) == 0.0
    assert turn.own_share(("church", "thrilled")) == 0.5
    assert subject_of("Maria: I joined a church.").own_share(("church",)) == 1.0


def test_a_japanese_turn_keeps_all_its_words_as_its_speakers() -> None:
    turn = subject_of("遥: 来週箱根に行くんだ。あなたも来る？")
    assert turn.names == ("遥",) and turn.listener_words == frozenset()


def test_a_name_ending_like_a_plural_is_still_found_as_a_subject() -> None:
    james = Term(frozenset({"jam"}), 1.5, True, "James's")
    assert "james" in name_keys(james)
