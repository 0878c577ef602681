"""Japanese text as memory reads it: canonical forms, words, readings, sounds and dates.

- :mod:`.canonical` — the canonical copy of a text that the write and read paths compare;
- :mod:`.lexicon` — content-word keys (Sudachi) and the temporal rewriting of a query;
- :mod:`.phonetic` — readings as sound keys, fuzzy matching of mis-heard words;
- :mod:`.temporal` — relative dates (週末, 来週の土曜, 明日) resolved against "today";
- :mod:`.holidays` — Japanese national holidays, for 連休 and named days;
- :mod:`.absolute_dates` — absolute dates in fact text, and how omoide writes dates;
- :mod:`.block_text` — what people said, made safe inside a tagged prompt block
  (:func:`~.block_text.escape_memory_text` for the memory blocks);
- :mod:`.word_classes` — the word classes (first person, family, ...) every caller shares.

This room imports nothing else of omoide's memory: every other room builds on it.
"""
