"""Sentence splitting for TTS: Japanese and ASCII terminators, newlines, first comma."""

from __future__ import annotations

import pytest

from omoide.pipeline.splitter import SentenceSplitter, split_sentences


@pytest.mark.parametrize(("text", "sentences"), [
    ("こんにちは。元気？今日は晴れだね！", ["こんにちは。", "元気？", "今日は晴れだね！"]),
    ("本当?すごい!やったね", ["本当?", "すごい!", "やったね"]),
    ("えっ！？本当に？！", ["えっ！？", "本当に？！"]),
    ("一行目\n二行目\n", ["一行目", "二行目"]),
    ("「行こう！」と言った。次。", ["「行こう！」", "と言った。", "次。"]),
    ("ええと…そうだね。", ["ええと…そうだね。"]),
    ("Yahoo!Japanで見た。", ["Yahoo!Japanで見た。"]),
    ("", []),
])
def test_splits_at_sentence_ends(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_first_sentence_is_cut_at_a_comma_when_asked() -> None:
    text = "うん、それはいいね、すごく楽しそう。また、話そうね。"
    assert split_sentences(text, first_sentence_comma_split=True) == [
        "うん、それはいいね、", "すごく楽しそう。", "また、話そうね。"]
    assert split_sentences(text) == ["うん、それはいいね、すごく楽しそう。", "また、話そうね。"]


def test_streamed_pieces_give_the_same_sentences_as_whole_text() -> None:
    text = "こんにちは！今日はいい天気だね。散歩に行こうよ?それとも家にいる？"
    for size in (1, 2, 3, 7):
        splitter = SentenceSplitter()
        out: list[str] = []
        for i in range(0, len(text), size):
            out += splitter.feed(text[i:i + size])
        out += splitter.flush()
        assert out == split_sentences(text), size


def test_a_sentence_is_released_as_soon_as_its_terminator_arrives() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("こんにちは。") == ["こんにちは。"]
    assert splitter.feed("元気") == []
    assert splitter.flush() == ["元気"]


def test_punctuation_arriving_after_a_released_sentence_is_not_spoken_twice() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("えっ！") == ["えっ！"]
    assert splitter.feed("？」本当") == []
    assert splitter.feed("に？") == ["本当に？"]


def test_overlong_text_without_terminators_is_cut_at_a_comma() -> None:
    long = "あ" * 130 + "、" + "い" * 10
    assert split_sentences(long)[0] == "あ" * 130 + "、"
