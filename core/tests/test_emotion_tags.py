"""The emotion tag at the head of a reply is parsed off and never spoken."""

from __future__ import annotations

import pytest

from omoide.pipeline.emotion import StreamingEmotionParser, parse_emotion
from omoide.types import Emotion


@pytest.mark.parametrize(("reply", "emotion", "spoken"), [
    ("[happy] いいね！", Emotion.HAPPY, "いいね！"),
    ("[Sad]残念だね。", Emotion.SAD, "残念だね。"),
    ("【laughing】あはは", Emotion.LAUGHING, "あはは"),
    ("<sleepy> ねむい", Emotion.SLEEPY, "ねむい"),
    ("[confused] え？", Emotion.DOUBTFUL, "え？"),
    ("[悲しい] そっか", Emotion.SAD, "そっか"),
    ("😂 面白い", Emotion.LAUGHING, "面白い"),
    ("🤔うーん", Emotion.THINKING, "うーん"),
    ("タグなしの返事", Emotion.NEUTRAL, "タグなしの返事"),
    ("[not-an-emotion] 本文", Emotion.NEUTRAL, "本文"),
    ("<blush>えへへ", Emotion.NEUTRAL, "えへへ"),
    ("【お知らせ】明日は雨", Emotion.NEUTRAL, "【お知らせ】明日は雨"),
])
def test_parses_the_head_tag(reply: str, emotion: Emotion, spoken: str) -> None:
    tagged = parse_emotion(reply)
    assert (tagged.emotion, tagged.text) == (emotion, spoken)


def test_a_tag_split_across_stream_pieces_is_held_back_until_complete() -> None:
    parser = StreamingEmotionParser()
    assert parser.feed("[ha") is None
    assert parser.feed("ppy") is None
    decided = parser.feed("] こん")
    assert decided is not None and decided.emotion is Emotion.HAPPY
    assert decided.text == "こん"
    later = parser.feed("にちは")
    assert later is not None and later.text == "にちは"


def test_text_without_a_tag_is_released_at_once() -> None:
    parser = StreamingEmotionParser()
    decided = parser.feed("やあ")
    assert decided is not None and decided.emotion is Emotion.NEUTRAL and decided.text == "やあ"


def test_a_reply_that_is_only_a_tag_speaks_nothing() -> None:
    parser = StreamingEmotionParser()
    assert parser.feed("[sad") is None
    tail = parser.finish()  # an unterminated tag is not a tag: it is spoken as is
    assert (tail.emotion, tail.text) == (Emotion.NEUTRAL, "[sad")
    parser = StreamingEmotionParser()
    parser.feed("[sad]")
    assert parser.finish().text == ""


@pytest.mark.parametrize(("tag", "emotion"), [
    ("joy", Emotion.HAPPY), ("fun", Emotion.LAUGHING), ("smile", Emotion.HAPPY),
    ("angry", Emotion.ANGRY), ("sorrow", Emotion.SAD)])
def test_the_references_own_tags_are_recognised_and_not_spoken(tag: str,
                                                                 emotion: Emotion) -> None:
    tagged = parse_emotion(f"[{tag}]みそラーメンだよ。")
    assert (tagged.emotion, tagged.text) == (emotion, "みそラーメンだよ。")


def test_tags_inside_the_reply_are_removed() -> None:
    tagged = parse_emotion("[happy] いいね。[wink]また行こう<smile>ね【喜び】。")
    assert tagged.text == "いいね。また行こうね。"


def test_a_tag_inside_a_stream_split_across_pieces_is_never_released() -> None:
    parser = StreamingEmotionParser()
    spoken = ""
    for piece in ["[smile]", "うん。", "[wi", "nk]", "またね"]:
        tagged = parser.feed(piece)
        if tagged is not None:
            spoken += tagged.text
    spoken += parser.finish().text
    assert spoken == "うん。またね"


def test_an_unknown_head_tag_split_across_pieces_is_dropped() -> None:
    parser = StreamingEmotionParser()
    assert parser.feed("[bl") is None
    decided = parser.feed("ush] やあ")
    assert decided is not None
    assert (decided.emotion, decided.text) == (Emotion.NEUTRAL, "やあ")


def test_a_bracket_that_never_closes_is_spoken_once_it_is_too_long_for_a_tag() -> None:
    parser = StreamingEmotionParser()
    parser.feed("はい。")
    held = parser.feed("[これは")
    assert held is not None and held.text == ""
    released = parser.feed("とても長い括弧書きで、タグではありません")
    assert released is not None and released.text.startswith("[これは")
