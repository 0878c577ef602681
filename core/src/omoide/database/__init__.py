"""The shared database: PostgreSQL for several workers, beside the embedded SQLite files.

- :mod:`.connection` — :func:`~.connection.open_pool`, a psycopg 3 connection pool for
  ``database.url``; psycopg is imported only when a PostgreSQL URL is configured;
- :mod:`.migrations` — numbered SQL migrations, each applied once, in order, under an
  advisory lock, recorded in a versioned schema table.

Without ``database.url`` nothing here is used: the journal and the rest stay in SQLite
files in the data dir. May import the shared modules (errors) only; the rooms that keep
state on PostgreSQL (the journal first) import this package, never the other way round.
"""
