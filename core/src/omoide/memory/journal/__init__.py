"""What omoide keeps before anything else: the exchange journal and the data it vouches for.

- :mod:`.storage` — :class:`~.storage.ExchangeJournal`, what the journal's callers use,
  with two implementations that pass one contract suite (``tests/database``):
- :mod:`.exchange_log` — :class:`~.exchange_log.Journal`, every exchange in SQLite (WAL),
  written before extraction, with its extraction state and quarantine (the default);
- :mod:`.postgres_journal` — the same on PostgreSQL (``database.url``), shared by several
  workers, extraction work leased (``FOR UPDATE SKIP LOCKED``, lease expiry); its tables
  in :mod:`.postgres_schema`; :mod:`.opening` picks one from the ``database:`` section;
- :mod:`.extraction_batches` — what the chat model answered for a batch of exchanges,
  journaled before the store is touched;
- :mod:`.spill` — the file exchanges go to when the journal cannot take them;
- :mod:`.manifest` — what memory data a data directory holds;
- :mod:`.data_guard` — start-up checks that refuse to start over missing data;
- :mod:`.keeper` — start-up checks, spill recovery and the manifest, together;
- :mod:`.activity` — who talked to omoide and when, read from the journal.

May import the language and facts rooms and the shared modules at memory's top
(:mod:`~omoide.memory.store_payload`, :mod:`~omoide.memory.memory_json`,
:mod:`~omoide.memory.config`) and :mod:`omoide.database`; never index, recall,
extract or control.
"""
