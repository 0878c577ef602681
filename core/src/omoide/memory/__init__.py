"""Long-term memory: a few rooms, each with an ``__init__`` that says what it holds.

- :mod:`.language` — Japanese text analysis every other room builds on (canonical text,
  words, readings, sounds, dates, holidays, word classes);
- :mod:`.journal` — the exchange journal, written before anything else, and the data
  checks that refuse to start over missing data;
- :mod:`.extract` — from journaled conversation to stored facts (prompt, dedup,
  planning, the exactly-once runner);
- :mod:`.index` — per-person indexes: the index itself, the cache with its builds, LRU
  and persistence, the dense snapshots that answer while an index is built;
- :mod:`.recall` — the read engines (robust, baseline), intent, subject, the profile,
  the prompt blocks;
- :mod:`.control` — memory control for people and admins (JSON shapes, import, forget
  with undo, profile editing, search relevance).

And at the top: :mod:`.engine` (:class:`~.engine.MemoryEngine`, the one door a turn uses),
:mod:`.api` (the service the pipeline sees), :mod:`.config` (the ``memory:`` section),
:mod:`.plugin` (omoide's own memory stages, registered like anyone's),
:mod:`.stage_views` (what the engine hands its stages), :mod:`.stage_loader`,
:mod:`.store_payload` (a memory in a vector store's payload, and back).
"""
