"""Faces: omoide's emotions (and xiaozhi's emoji names) onto what StackChan can show.

The official StackChan firmware's ``SetEmotion`` accepts exactly eight names and shows
anything else as neutral, so the server only ever sends these.
"""

from __future__ import annotations

from omoide.api import Emotion

STACKCHAN_FACES = ("neutral", "happy", "laughing", "angry", "sad", "crying", "sleepy",
                   "doubtful")

FACE_EMOJI = {"neutral": "😶", "happy": "🙂", "laughing": "😆", "angry": "😠", "sad": "😔",
              "crying": "😭", "sleepy": "😴", "doubtful": "🤔"}

# Everything the chat model or another server might name, onto the eight faces.
# Surprise in a chat reply is nearly always delight ("えーすごい！"), and the doubtful face
# reads as disbelief, so surprise goes to happy; puzzlement of any kind goes to doubtful.
_ALIASES = {
    Emotion.SURPRISED.value: "happy",
    Emotion.LOVING.value: "happy",
    Emotion.THINKING.value: "doubtful",
    Emotion.EMBARRASSED.value: "happy",
    Emotion.RELAXED.value: "neutral",
    # xiaozhi's 21 emoji names
    "funny": "laughing", "silly": "laughing", "shocked": "doubtful", "confused": "doubtful",
    "winking": "happy", "cool": "happy", "delicious": "happy", "kissy": "happy",
    "confident": "happy",
    # tags the reference's chat model used
    "joy": "happy", "fun": "laughing", "smile": "happy", "sorrow": "sad",
}


def stackchan_face(emotion: Emotion | str | None) -> str:
    """The StackChan face for ``emotion``; unknown or missing emotions are ``neutral``."""
    if emotion is None:
        return "neutral"
    name = (emotion.value if isinstance(emotion, Emotion) else str(emotion)).strip().lower()
    if name in STACKCHAN_FACES:
        return name
    return _ALIASES.get(name, "neutral")


def face_emoji(face: str) -> str:
    return FACE_EMOJI.get(face, FACE_EMOJI["neutral"])
