"""Moments: omoide speaks first, from what it remembers.

A moment is something worth saying unprompted to one person inside a window of time:
the day before and the morning of a dated plan, a follow-up the first time the person
talks after it, a family member's birthday the day before, a reminder the person asked
for. :mod:`~omoide.moments.planning` reads them from the person's current memories
(moved and cancelled plans give way to what holds now); :mod:`~omoide.moments.delivery`
says each once — when that person's robot is online and idle, or at the start of their
next conversation inside the window — never in the person's quiet hours
(:mod:`~omoide.moments.quiet_hours`: their own, the config's, the household's; a robot
a household shares also keeps those of whoever is near it,
:mod:`~omoide.moments.presence`), never past the day's limit, never to a guest;
:mod:`~omoide.moments.ledger` records what was said (SQLite, journaled) so a restart
neither repeats nor loses one; :mod:`~omoide.moments.journaling` writes a pushed moment
to the exchange journal and the short-term history as the robot's line;
:mod:`~omoide.moments.writing` has the chat model write the line from the memories.

May import the memory engine's facts and index rooms, the components and the shared
modules; nothing imports it but the server, the CLI and the bench.
"""
