"""From journaled conversation to stored facts.

- :mod:`.prompt` — the extraction prompt and tolerant parsing of the model's JSON facts;
- :mod:`.chat_extractor` — the ``chat`` extractor stage (the configured chat model);
- :mod:`.planning` — what each fact of a batch does to the store (journaled first);
- :mod:`.runner` — one extraction run for one person, exactly once across crashes.

May import the language, facts and journal rooms (dedup and a fact's shape are in
:mod:`omoide.memory.facts`); never index, recall or control.
"""
