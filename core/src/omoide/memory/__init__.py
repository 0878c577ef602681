"""Long-term memory: journal, extraction, retrieval engines, evaluation.

- :mod:`~omoide.memory.engine` — :class:`MemoryEngine`, the :class:`MemoryService` the
  pipeline uses, plus memory control (search, get, forget, export, import, pending,
  reembed).
- :mod:`~omoide.memory.journal` — the durable exchange log (SQLite, WAL).
- :mod:`~omoide.memory.extraction` — the extraction prompt (fixed ``<conversation>``
  format) and tolerant parsing of the chat model's JSON facts.
- :mod:`~omoide.memory.dedup` — duplicate / update / new verdicts for a new fact.
- :mod:`~omoide.memory.baseline` — the reference's read algorithm, for comparison.
- :mod:`~omoide.memory.robust` — the default read engine: canonical query copy,
  dense + lexical + sound + entity + temporal channels, rank fusion, an evidence gate
  that also brings memories up when the talk is about them (contextual recall).
- :mod:`~omoide.memory.profile` — profile or episodic (the classifier), the budgeted
  ``<profile>`` block in every prompt; :mod:`~omoide.memory.profile_edit` — seeing and
  editing it (``omoide memory profile``, ``/v1/users/{user}/profile``).
- :mod:`~omoide.memory.phonetic` — readings as sound keys, fuzzy matching of mis-heard
  words within the person's own vocabulary.
- :mod:`~omoide.memory.text`, :mod:`~omoide.memory.lexicon`, :mod:`~omoide.memory.intent`,
  :mod:`~omoide.memory.temporal`, :mod:`~omoide.memory.holidays`,
  :mod:`~omoide.memory.dates` — canonicalisation, Japanese analysis (Sudachi), recall
  intent, relative dates, Japanese holidays, absolute dates.
- :mod:`~omoide.memory.index` — the per-user in-process index the robust engine reads.
- :mod:`~omoide.memory.prompt` — :func:`render_memory_block` (``<retrieved_memory>``).
- :mod:`~omoide.memory.eval` — ``omoide eval`` (probe format and LoCoMo).
"""
