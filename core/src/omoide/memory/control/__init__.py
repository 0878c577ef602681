"""Memory control: what people and admins do with memories (CLI, HTTP, console).

- :mod:`.json_shapes` — the JSON shapes both the HTTP routes and the CLI print;
- :mod:`.import_format` — the import format, read strictly and in a stream;
- :mod:`.forget_undo` — forgetting with an undo window;
- :mod:`.profile_edit` — seeing and editing a person's profile;
- :mod:`.relevance` — which memories a person's search is about;
- :mod:`.repair` — rebuilding a person's lost store from the journal.

May import every other room; nothing in the turn path imports this one.
"""
