"""The shared database: PostgreSQL for several workers, beside the embedded SQLite files.

- :mod:`.connection` — :func:`~.connection.open_pool`, a psycopg 3 connection pool for
  ``database.url``; psycopg is imported only when a PostgreSQL URL is configured;
- :mod:`.migrations` — numbered SQL migrations, each applied once, in order, under an
  advisory lock, recorded in a versioned schema table.

Which setups allow several ``omoide serve`` workers:

=====================  ========================  ===========================================
``database.url``       store                     workers
=====================  ========================  ===========================================
unset (SQLite files)   any                       one per data dir (the data-dir lock)
PostgreSQL             in local files (path:)    one that matters: another worker's memories
                                                 would land in its own store (warned at start)
PostgreSQL             a server (Qdrant url:,    several, each with its own ``server.data_dir``
                       Chroma host:)             (e.g. ``{$env: OMOIDE_DATA_DIR}``): the journal
                                                 and extraction are shared and leased
=====================  ========================  ===========================================

A data dir still belongs to one process: it holds per-worker files (the spill file, the
manifest, saved indexes, traces) and, until they move to the database too, the timers —
so several workers do not yet share those (issue 30 goes on). With ``database.url`` the
journal (:mod:`omoide.memory.journal.postgres_journal`), the tokens and browser sessions
(:mod:`omoide.server.postgres_tokens`), the voiceprints (:mod:`omoide.voices.shared_store`),
the undo copies of forgotten memories (:mod:`omoide.memory.control.postgres_forgotten`),
the console's recent turns (:mod:`omoide.server.postgres_turns`) and the StackChan
pairings, pending activation codes and token secret (the plugin's ``shared_pairing``,
through its host's ``database_url``) are in the database.

Without ``database.url`` nothing here is used: the journal and the rest stay in SQLite
files in the data dir. May import the shared modules (errors) only; the rooms that keep
state on PostgreSQL (the journal first) import this package, never the other way round.
"""
