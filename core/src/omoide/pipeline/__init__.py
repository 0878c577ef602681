"""The turn pipeline: vad -> asr -> retrieve -> prompt -> chat -> split -> tts -> device."""
