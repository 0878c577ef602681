"""Per-person indexes the robust read engine recalls from.

- :mod:`.person_index` — :class:`~.person_index.UserIndex`: lexical, entity and temporal
  postings and cached vectors of one person's memories, about 1.7 KB a memory with its
  vector (:data:`~.lru.ENTRY_BYTES`), built on :mod:`.postings` (a key's memories as an
  id, a tuple or an array of memory numbers) and :mod:`.quantised_vectors` (int8 rows);
- :mod:`.cache` — :class:`~.cache.IndexCache`, the façade the engine talks to, composing
  :mod:`.builds` (from the store a page at a time, or loaded), :mod:`.lru` (ready
  indexes bounded in megabytes), :mod:`.persistence` (saved indexes and records),
  :mod:`.shared_store_refresh` (other processes' writes), :mod:`.dense_fallback` (dense
  recall until an index is ready), :mod:`.warm_start` and :mod:`.cache_worker` (the
  worker thread and background work);
- :mod:`.saved_indexes` — indexes kept on disk between starts;
- :mod:`.build_scheduling` — build slots that go to whoever waits for one now;
- :mod:`.foreground_recalls` — recalls under way, so large builds step aside;
- :mod:`.dense_snapshot` / :mod:`.dense_snapshot_files` — a person's vectors as read from
  the store, in memory and on disk, for dense recall while an index is built;
- :mod:`.dense_path_timing` — how long dense recall from the store takes now.
- :mod:`.peer_writes` over :mod:`.peer_channel` — with several workers on PostgreSQL,
  each write announced (a version per person and a ``NOTIFY``) and other workers'
  writes applied to the cached indexes here.

May import the language, facts and journal rooms and the shared modules at memory's
top; never recall, extract or control (recall reads indexes, not the other way round).
"""
