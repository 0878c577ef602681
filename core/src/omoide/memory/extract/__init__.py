"""From journaled conversation to stored facts.

- :mod:`.prompt` — the extraction prompt and tolerant parsing of the model's JSON facts;
- :mod:`.chat_extractor` — the ``chat`` extractor stage (the configured chat model);
- :mod:`.fact_shape` — what a fact is about (Sudachi), the shape dedup compares;
- :mod:`.dedup` — new, duplicate or update of a stored fact;
- :mod:`.planning` — what each fact of a batch does to the store (journaled first);
- :mod:`.runner` — one extraction run for one person, exactly once across crashes.

May import the language and journal rooms; never recall or index.
"""
