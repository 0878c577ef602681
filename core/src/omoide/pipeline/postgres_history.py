"""Short-term history on the shared database (``database.url``), seen by every worker.

A person's turns may land on different workers: the exchange said on worker A a minute
ago must be the context of the next turn on worker B. The table keeps what
:class:`~omoide.pipeline.history.ConversationHistory` keeps in memory and no more — each
person's last ``keep`` exchanges (an add deletes the older rows of that person, in the
same transaction) — and :meth:`PostgresHistory.recent` applies the same window: nothing
when the last utterance was ``window`` ago or more. Times are kept as the exchange's own
ISO text, so the window is computed exactly as in memory.

The database not answering costs a turn its shared context, never the turn: the history
also keeps this worker's own exchanges in memory, and reads those meanwhile (logged).
:meth:`~PostgresHistory.add` and :meth:`~PostgresHistory.recent` block (a round trip on
a small pool of its own, opened and migrated at the first use, migrations component
``short_term_history``); a turn calls their ``_async`` forms, which wait in a worker
thread, so the event loop serves other turns meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from omoide.database.connection import LazyPool, is_postgresql_url
from omoide.database.migrations import Migration
from omoide.pipeline.history import ConversationHistory
from omoide.types import Exchange

if TYPE_CHECKING:
    pass

log = logging.getLogger("omoide.history")

COMPONENT = "short_term_history"
MIGRATIONS = (
    Migration(1, "each person's last exchanges", """
CREATE TABLE short_term_history (
    seq BIGSERIAL PRIMARY KEY,
    person TEXT NOT NULL,
    exchange_id TEXT NOT NULL,
    user_text TEXT NOT NULL,
    assistant_text TEXT NOT NULL,
    at TEXT NOT NULL,
    session_id TEXT
);
CREATE INDEX short_term_history_person ON short_term_history (person, seq);
"""),
)

_INSERT = ("INSERT INTO short_term_history (person, exchange_id, user_text, assistant_text,"
           " at, session_id) VALUES (%s, %s, %s, %s, %s, %s)")
_TRIM = ("DELETE FROM short_term_history WHERE person = %s AND seq NOT IN (SELECT seq"
         " FROM short_term_history WHERE person = %s ORDER BY seq DESC LIMIT %s)")
_RECENT = ("SELECT exchange_id, user_text, assistant_text, at, session_id FROM"
           " short_term_history WHERE person = %s ORDER BY seq DESC LIMIT %s")


class PostgresHistory(ConversationHistory):
    """:class:`ConversationHistory` shared by the workers of one database (see the
    module)."""

    def __init__(self, url: str, keep: int, window: timedelta, *, pool_size: int = 2,
                 timeout_s: float = 3.0) -> None:
        super().__init__(keep, window)
        self.url = url
        self._db = LazyPool(url, COMPONENT, MIGRATIONS, size=pool_size, timeout_s=timeout_s,
                            name="omoide-history")

    def _run(self, *statements: tuple[str, Sequence[object]]) -> list[tuple[Any, ...]]:
        """Run ``statements`` in one transaction; the last one's rows."""
        return self._db.run(*statements)

    def add(self, exchange: Exchange) -> None:
        if self.keep <= 0:
            return
        super().add(exchange)   # this worker's own, read while the database is away
        e = exchange
        try:
            self._run((_INSERT, (e.user, e.id, e.user_text, e.assistant_text,
                                 e.at.isoformat(), e.session_id)),
                      (_TRIM, (e.user, e.user, self.keep)))
        except Exception as exc:  # noqa: BLE001 - the turn has answered; say so in the log
            log.warning("the short-term history of %s was not shared (%s: %s)", e.user,
                        type(exc).__name__, exc)

    def recent(self, user: str, now: datetime) -> list[Exchange]:
        if self.keep <= 0:
            return []
        try:
            rows = self._run((_RECENT, (user, self.keep)))
        except Exception as exc:  # noqa: BLE001 - the turn goes on with this worker's own
            log.warning("the shared short-term history is unavailable (%s: %s); this"
                        " worker's own is used", type(exc).__name__, exc)
            return super().recent(user, now)
        items = [Exchange(exchange_id, user, user_text, assistant_text,
                          datetime.fromisoformat(at), session_id)
                 for exchange_id, user_text, assistant_text, at, session_id in reversed(rows)]
        if not items or now - items[-1].at >= self.window:
            return []
        return items

    async def add_async(self, exchange: Exchange) -> None:
        await asyncio.to_thread(self.add, exchange)

    async def recent_async(self, user: str, now: datetime) -> list[Exchange]:
        return await asyncio.to_thread(self.recent, user, now)

    def erase(self, user: str) -> int:
        """Forget ``user``'s short-term history on every worker (raises when the
        database does not answer: an erasure is not silently partial)."""
        super().erase(user)
        rows = self._run(("DELETE FROM short_term_history WHERE person = %s RETURNING seq",
                          (user,)))
        return len(rows)

    def close(self) -> None:
        self._db.close()


def history_for(history: ConversationHistory, url: str | None) -> ConversationHistory:
    """``history`` itself, or with a PostgreSQL ``url`` one of the same size and window
    shared by every worker of that database."""
    if not is_postgresql_url(url):
        return history
    return PostgresHistory(str(url), history.keep, history.window)
