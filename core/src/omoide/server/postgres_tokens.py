"""The admin token, the person tokens and browser sessions in PostgreSQL, shared by
every worker.

The same records as :class:`omoide.server.tokens.TokenStore` keeps in
``<data_dir>/auth/`` — the admin token in clear text (``omoide token show`` prints it;
whoever can read the database owns omoide anyway), each person token as its SHA-256 —
in two tables (:data:`MIGRATIONS`, component ``auth``). A presented token is looked up
in the database on every check (one indexed read), so a rotation or a revocation made on
one worker, or by ``omoide token`` anywhere, holds on every worker at once. A browser
session signed in on one worker is known to all (:class:`PostgresSessionStore`, the
rules of :class:`omoide.server.auth.SessionStore`; only each cookie's SHA-256 is kept).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from omoide.database.connection import migrated_pool
from omoide.database.migrations import Migration
from omoide.server.auth import SESSIONS_PER_TOKEN, SessionStore, SessionTableFull
from omoide.server.tokens import (
    _MAX_TOKEN_LENGTH,
    ADMIN_PREFIX,
    PERSON_PREFIX,
    PersonToken,
    TokenMatch,
    TokenStorage,
    TokenStore,
    TokenStoreUnavailable,
    fingerprint,
)
from omoide.user_ids import validate_user_id

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

T = TypeVar("T")
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
    Migration(2, "browser sessions", """
CREATE TABLE auth_sessions (
    key_sha256 TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    role TEXT NOT NULL,
    "user" TEXT,
    expires_at TIMESTAMPTZ NOT NULL,
    seq BIGSERIAL
);
CREATE INDEX auth_sessions_token ON auth_sessions (fingerprint, seq);
"""),
)


CHECK_WAIT_S = 3.0
"""Seconds a token check waits for a database connection before it is refused."""


class PostgresTokenStore:
    """The tokens of every worker on one database (the :class:`TokenStore` methods)."""

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        self.url = url
        self.pool_size = pool_size
        self._pool: ConnectionPool | None = None

    def _conn(self) -> ConnectionPool:
        if self._pool is None:
            # a request waits at most CHECK_WAIT_S for a connection: refused with 503
            # then, rather than held through the pool's default wait
            self._pool = migrated_pool(self.url, COMPONENT, MIGRATIONS, size=self.pool_size,
                                       name="omoide-auth", timeout_s=CHECK_WAIT_S)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def import_tokens(self, files: TokenStore) -> tuple[bool, int]:
        """Copy the tokens of a data dir's files in (``omoide migrate``): the admin token
        unless the database has one, and every person token not there yet. Returns
        whether the admin token was copied and how many person tokens were."""
        admin = files.admin_token() if files.admin_path.exists() else None
        copied_admin = bool(admin) and bool(self._rows(
            "INSERT INTO auth_admin_token(id, token, sha256) VALUES (1, %s, %s)"
            " ON CONFLICT (id) DO NOTHING RETURNING id", (admin, fingerprint(admin or ""))))
        copied = 0
        for e in files.person_tokens():
            copied += len(self._rows(
                'INSERT INTO auth_person_tokens(id, "user", created_at, label, sha256)'
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
                (e.id, e.user, e.created_at, e.label, e.sha256)))
        return copied_admin, copied

    def transaction(self, work: Callable[[Any], T]) -> T:
        """Run ``work(connection)`` in one transaction (the session store's too).

        A connection the database closed (it restarted) is dropped by the pool and the
        work tried once more on another; a database that still does not answer raises
        :class:`TokenStoreUnavailable` (:class:`DatabaseUnavailable` when the pool could
        not be opened at all)."""
        import psycopg
        import psycopg_pool

        for attempt in (1, 2):
            try:
                with self._conn().connection() as conn, conn.transaction():
                    return work(conn)
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if attempt == 2:
                    raise TokenStoreUnavailable(
                        f"the token database does not answer ({type(exc).__name__})") from exc
            except psycopg_pool.PoolTimeout as exc:
                raise TokenStoreUnavailable(
                    f"the token database does not answer ({type(exc).__name__})") from exc
        raise AssertionError("unreachable")

    def _rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        def read(conn: Any) -> list[tuple[Any, ...]]:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []
        return self.transaction(read)

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


class PostgresSessionStore:
    """Browser sessions in the database: a cookie made on one worker opens every worker.

    The same rules as :class:`omoide.server.auth.SessionStore`: a session ends when it
    expires, is deleted, or its token is rotated or revoked; a token keeps at most
    ``per_token`` sessions (its own oldest go first); beyond ``capacity`` in all a new
    one is refused (:class:`SessionTableFull`) after sessions of revoked tokens are
    cleared, never another person's live one."""

    def __init__(self, tokens: PostgresTokenStore, lifetime_s: float,
                 capacity: int = 10_000, per_token: int = SESSIONS_PER_TOKEN) -> None:
        self._tokens = tokens
        self._lifetime_s = lifetime_s
        self._capacity = capacity
        self._per_token = per_token

    @property
    def lifetime_s(self) -> float:
        return self._lifetime_s

    def create(self, credential: TokenMatch) -> str:
        """A new session for ``credential``; raises :class:`SessionTableFull`."""
        key = secrets.token_urlsafe(32)

        def write(conn: Any) -> bool:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('omoide-auth-sessions'))")
            conn.execute("DELETE FROM auth_sessions WHERE expires_at <= now()")
            conn.execute("DELETE FROM auth_sessions WHERE key_sha256 IN (SELECT key_sha256"
                         " FROM auth_sessions WHERE fingerprint=%s ORDER BY seq DESC"
                         " OFFSET %s)", (credential.fingerprint, self._per_token - 1))
            if self._count(conn) >= self._capacity:
                conn.execute(
                    "DELETE FROM auth_sessions s WHERE NOT EXISTS (SELECT 1 FROM"
                    " auth_admin_token a WHERE a.sha256=s.fingerprint) AND NOT EXISTS"
                    ' (SELECT 1 FROM auth_person_tokens p WHERE p.sha256=s.fingerprint'
                    ' AND p."user"=s."user")')
            if self._count(conn) >= self._capacity:
                return False
            conn.execute('INSERT INTO auth_sessions(key_sha256, fingerprint, role, "user",'
                         " expires_at) VALUES (%s, %s, %s, %s,"
                         " now() + make_interval(secs => %s))",
                         (fingerprint(key), credential.fingerprint, credential.role,
                          credential.user, self._lifetime_s))
            return True
        if not self._tokens.transaction(write):
            raise SessionTableFull(f"{self._capacity} browser sessions are open")
        return key

    @staticmethod
    def _count(conn: Any) -> int:
        return int(conn.execute("SELECT COUNT(*) FROM auth_sessions").fetchone()[0])

    def lookup(self, key: str) -> TokenMatch | None:
        rows = self._tokens.transaction(lambda c: c.execute(
            'SELECT fingerprint, role, "user" FROM auth_sessions WHERE key_sha256=%s AND'
            " expires_at > now()", (fingerprint(key),)).fetchall())
        if not rows:
            return None
        fp, role, user = rows[0]
        match = TokenMatch("admin" if role == "admin" else "person",
                           None if user is None else str(user), str(fp))
        if not self._tokens.still_valid(match):
            self.end(key)
            return None
        return match

    def end(self, key: str) -> bool:
        gone = self._tokens.transaction(lambda c: c.execute(
            "DELETE FROM auth_sessions WHERE key_sha256=%s", (fingerprint(key),)).rowcount)
        return bool(gone)


def session_store(tokens: TokenStorage, lifetime_s: float, *, capacity: int = 10_000,
                  per_token: int = SESSIONS_PER_TOKEN,
                  ) -> SessionStore | PostgresSessionStore:
    """Browser sessions kept where the tokens are: in this process's memory beside the
    data dir's token files, in the database beside its token tables; at most
    ``capacity`` in all and ``per_token`` for one token (server.limits)."""
    if isinstance(tokens, PostgresTokenStore):
        return PostgresSessionStore(tokens, lifetime_s, capacity=capacity,
                                    per_token=per_token)
    return SessionStore(tokens, lifetime_s, capacity=capacity, per_token=per_token)


def token_store(data_dir: Path, database_url: str | None) -> TokenStorage:
    """The token store for a config: the files in ``data_dir/auth`` without a database
    URL, the tables every worker shares with one."""
    return TokenStore(data_dir) if not database_url else PostgresTokenStore(database_url)
