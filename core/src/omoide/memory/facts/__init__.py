"""What a fact is, and how two compare: the analyses every later room shares.

- :mod:`.profile` — profile (who the person is: health, family, home, work, likes,
  habits...) or episodic (a plan, an event); the classifier, the kind a fact is stored
  with, and the budgeted selection of the profile (the contract types themselves live in
  :mod:`omoide.components.memory_types`);
- :mod:`.subject` — whom a memory is about, and which words its speaker says of
  themselves;
- :mod:`.shape` — what a fact is about, read with Sudachi: the shape dedup compares;
- :mod:`.dedup` — is a new fact new, a duplicate, or an update of a stored one;
- :mod:`.validity` — when a fact stops being true and which one replaced it (the same
  slot of the same someone, or a change the newer fact says).

May import only :mod:`omoide.memory.language` (and the core's types and contracts):
journal, index, recall, extract and control all build on it.
"""
