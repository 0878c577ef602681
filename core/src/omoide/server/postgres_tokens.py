"""The admin token and the person tokens in PostgreSQL, shared by every worker.

The same records as :class:`omoide.server.tokens.TokenStore` keeps in
``<data_dir>/auth/`` — the admin token in clear text (``omoide token show`` prints it;
whoever can read the database owns omoide anyway), each person token as its SHA-256 —
in two tables (:data:`MIGRATIONS`, component ``auth``). A presented token is looked up
in the database on every check (one indexed read), so a rotation or a revocation made on
one worker, or by ``omoide token`` anywhere, holds on every worker at once.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omoide.database.connection import open_pool
from omoide.database.migrations import Migration, apply_migrations
from omoide.server.tokens import (
    _MAX_TOKEN_LENGTH,
    ADMIN_PREFIX,
    PERSON_PREFIX,
    PersonToken,
    TokenMatch,
    TokenStorage,
    TokenStore,
    fingerprint,
)
from omoide.user_ids import validate_user_id

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

COMPONENT = "auth"
MIGRATIONS = (
    Migration(1, "admin token and person tokens", """
CREATE TABLE auth_admin_token (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    token TEXT NOT NULL,
    sha256 TEXT NOT NULL
);
CREATE TABLE auth_person_tokens (
    id TEXT PRIMARY KEY,
    "user" TEXT NOT NULL,
    created_at TEXT NOT NULL,
    label TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    seq BIGSERIAL
);
CREATE INDEX auth_person_tokens_user ON auth_person_tokens ("user");
"""),
)


class PostgresTokenStore:
    """The tokens of every worker on one database (the :class:`TokenStore` methods)."""

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        self.url = url
        self.pool_size = pool_size
        self._pool: ConnectionPool | None = None

    def _conn(self) -> ConnectionPool:
        if self._pool is None:
            pool = open_pool(self.url, size=self.pool_size, name="omoide-auth")
            with pool.connection() as conn:
                apply_migrations(conn, COMPONENT, MIGRATIONS)
            self._pool = pool
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self._conn().connection() as conn, conn.transaction():
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    # -- the admin token -------------------------------------------------------------
    def ensure_admin_token(self) -> bool:
        """Create the admin token if there is none; True when one was created."""
        token = ADMIN_PREFIX + secrets.token_urlsafe(32)
        made = self._rows("INSERT INTO auth_admin_token(id, token, sha256) VALUES"
                          " (1, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
                          (token, fingerprint(token)))
        return bool(made)

    def admin_token(self) -> str:
        """The admin token (created if there is none yet)."""
        self.ensure_admin_token()
        return str(self._rows("SELECT token FROM auth_admin_token WHERE id=1")[0][0])

    def rotate_admin_token(self) -> str:
        """Replace the admin token; the old one stops working on every worker."""
        token = ADMIN_PREFIX + secrets.token_urlsafe(32)
        self._rows("INSERT INTO auth_admin_token(id, token, sha256) VALUES (1, %s, %s)"
                   " ON CONFLICT (id) DO UPDATE SET token=EXCLUDED.token,"
                   " sha256=EXCLUDED.sha256", (token, fingerprint(token)))
        return token

    # -- person tokens ---------------------------------------------------------------
    def create_person_token(self, user: str, label: str = "") -> tuple[str, PersonToken]:
        """A new token for ``user``; returns the token (shown once) and its record."""
        validate_user_id(user)
        token = PERSON_PREFIX + secrets.token_urlsafe(32)
        entry = PersonToken(id=secrets.token_hex(4), user=user,
                            created_at=datetime.now().astimezone().isoformat(timespec="seconds"),
                            label=label[:100], sha256=fingerprint(token))
        self._rows('INSERT INTO auth_person_tokens(id, "user", created_at, label, sha256)'
                   " VALUES (%s, %s, %s, %s, %s)",
                   (entry.id, entry.user, entry.created_at, entry.label, entry.sha256))
        return token, entry

    def person_tokens(self, user: str | None = None) -> list[PersonToken]:
        """Person tokens (all, or ``user``'s), oldest first."""
        rows = self._rows('SELECT id, "user", created_at, label, sha256 FROM'
                          ' auth_person_tokens WHERE %(user)s::text IS NULL OR'
                          ' "user"=%(user)s ORDER BY seq', {"user": user})
        return [PersonToken(*map(str, r)) for r in rows]

    def revoke(self, *, token_id: str | None = None, user: str | None = None,
               ) -> list[PersonToken]:
        """Revoke one token by id, or every token of ``user``; returns what was revoked."""
        if token_id is None and user is None:
            raise ValueError("name a token id or a user")
        rows = self._rows('DELETE FROM auth_person_tokens WHERE id=%(id)s OR "user"=%(user)s'
                          ' RETURNING id, "user", created_at, label, sha256, seq',
                          {"id": token_id, "user": user})
        return [PersonToken(*map(str, r[:5])) for r in sorted(rows, key=lambda r: r[5])]

    # -- checking presented tokens -----------------------------------------------------
    def identify(self, token: str) -> TokenMatch | None:
        """Who ``token`` belongs to, or None (read from the database each time)."""
        if not token or len(token) > _MAX_TOKEN_LENGTH:
            return None
        presented = fingerprint(token)
        rows = self._rows(
            "SELECT 'admin', NULL FROM auth_admin_token WHERE sha256=%(fp)s UNION ALL"
            ' SELECT \'person\', "user" FROM auth_person_tokens WHERE sha256=%(fp)s',
            {"fp": presented})
        if not rows:
            return None
        role, user = rows[0]
        return (TokenMatch("admin", None, presented) if role == "admin"
                else TokenMatch("person", str(user), presented))

    def still_valid(self, match: TokenMatch) -> bool:
        """Whether the token behind ``match`` still opens the API (not rotated/revoked)."""
        if match.role == "admin":
            return bool(self._rows("SELECT 1 FROM auth_admin_token WHERE sha256=%s",
                                   (match.fingerprint,)))
        return bool(self._rows('SELECT 1 FROM auth_person_tokens WHERE sha256=%s AND'
                               ' "user"=%s', (match.fingerprint, match.user)))


def token_store(data_dir: Path, database_url: str | None) -> TokenStorage:
    """The token store for a config: the files in ``data_dir/auth`` without a database
    URL, the tables every worker shares with one."""
    return TokenStore(data_dir) if not database_url else PostgresTokenStore(database_url)
