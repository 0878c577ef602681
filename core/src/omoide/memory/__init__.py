"""Long-term memory: a few rooms, each with an ``__init__`` that says what it holds.

- :mod:`.language` — Japanese text analysis every other room builds on (canonical text,
  words, readings, sounds, dates, holidays, word classes);
- :mod:`.facts` — what a fact is and how two compare (profile or episodic and the
  profile's selection, whom it is about, its shape, new / duplicate / update);
- :mod:`.journal` — the exchange journal, written before anything else, and the data
  checks that refuse to start over missing data;
- :mod:`.extract` — from journaled conversation to stored facts (prompt, parsing,
  planning, the exactly-once runner);
- :mod:`.index` — per-person indexes: the index itself, the cache with its builds, LRU
  and persistence, the dense snapshots that answer while an index is built;
- :mod:`.recall` — the read engines (robust, baseline), the recall budget, intent, the
  prompt blocks;
- :mod:`.control` — memory control for people and admins (JSON shapes, import, forget
  with undo, profile editing, search relevance).

And at the top: :mod:`.engine` (:class:`~.engine.MemoryEngine`, the one door a turn uses),
:mod:`.api` (the service the pipeline sees), :mod:`.config` (the ``memory:`` section),
:mod:`.plugin` (omoide's own memory stages, registered like anyone's),
:mod:`.stage_views` (what the engine hands its stages), :mod:`.stage_loader`,
:mod:`.store_payload` (a memory in a vector store's payload, and back),
:mod:`.memory_json` (a memory as JSON: the export format and its strict check).

The rooms are ordered — language, facts, journal, index, recall, extract, control — and
a room imports only rooms before it and the shared modules at the top (``config``,
``api``, ``store_payload``, ``memory_json``): the engine, the stage views and the plugin
module compose them (``tests/test_house_rules.py`` checks it).
"""
