"""The read path: what a turn is told about its person.

- :mod:`.robust` — the default read engine: channels, rank fusion and an evidence gate;
- :mod:`.baseline` — the reference's read algorithm, kept exactly for comparison;
- :mod:`.budgeted_inputs` — the index and query vector a recall gathers within its budget;
- :mod:`.intent` — what kind of utterance this is (one signal for the gate);
- :mod:`.memory_block` — the ``<retrieved_memory>`` and ``<profile>`` blocks the chat
  model sees.

May import the language, facts and index rooms; never journal, extract or control.
"""
