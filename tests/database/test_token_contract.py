"""The token stores' contract: the files of a data dir and the tables every worker
shares answer alike; a change made by one worker (or ``omoide token``) holds on every
other at once. Each test runs on both (``backend``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from omoide.server.auth import BrowserSessions, SessionStore, SessionTableFull
from omoide.server.postgres_tokens import (
    PostgresSessionStore,
    PostgresTokenStore,
    session_store,
    token_store,
)
from omoide.server.tokens import TokenMatch, TokenStorage, TokenStore, fingerprint
from omoide.user_ids import InvalidUserId

StoreFactory = Callable[[], TokenStorage]


@pytest.fixture
def make_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
               ) -> Iterator[StoreFactory]:
    """Each call is another process (a worker, or the CLI) on the same tokens."""
    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    made: list[TokenStorage] = []

    def make() -> TokenStorage:
        store = token_store(tmp_path, url)
        made.append(store)
        return store

    yield make
    for store in made:
        if isinstance(store, PostgresTokenStore):
            store.close()


def test_the_store_follows_the_database_url(make_store: StoreFactory, backend: str) -> None:
    expected = PostgresTokenStore if backend == "postgresql" else TokenStore
    assert isinstance(make_store(), expected)


def test_the_admin_token_is_made_once(make_store: StoreFactory) -> None:
    store = make_store()
    assert store.ensure_admin_token() is True
    assert store.ensure_admin_token() is False
    token = store.admin_token()
    assert token.startswith("omoide_admin_") and len(token) > 40
    assert make_store().admin_token() == token


def test_a_token_identifies_its_owner(make_store: StoreFactory) -> None:
    store = make_store()
    alice, entry = store.create_person_token("alice", "phone")
    assert (entry.user, entry.label, entry.sha256) == ("alice", "phone", fingerprint(alice))
    admin = store.admin_token()
    match = store.identify(alice)
    assert match is not None and (match.role, match.user) == ("person", "alice")
    admin_match = store.identify(admin)
    assert admin_match is not None and (admin_match.role, admin_match.user) == ("admin", None)
    assert store.identify("omoide_user_guess") is None
    assert store.identify("") is None
    assert store.identify("x" * 10_000) is None


def test_changes_made_elsewhere_count_at_once(make_store: StoreFactory) -> None:
    worker, cli = make_store(), make_store()
    old_admin = worker.admin_token()
    admin_match = worker.identify(old_admin)
    alice, entry = cli.create_person_token("alice")
    alice_match = worker.identify(alice)
    assert alice_match is not None and worker.still_valid(alice_match)
    cli.rotate_admin_token()
    assert worker.identify(old_admin) is None
    assert admin_match is not None and not worker.still_valid(admin_match)
    assert cli.revoke(token_id=entry.id) == [entry]
    assert worker.identify(alice) is None and not worker.still_valid(alice_match)


def test_revoking_by_user_revokes_all_of_their_tokens(make_store: StoreFactory) -> None:
    store = make_store()
    first = store.create_person_token("alice")[1]
    second = store.create_person_token("alice")[1]
    _, bob = store.create_person_token("bob")
    assert store.person_tokens("alice") == [first, second]
    assert store.revoke(user="alice") == [first, second]
    assert store.person_tokens() == [bob]
    with pytest.raises(ValueError, match="token id or a user"):
        store.revoke()


def test_a_person_token_needs_a_valid_user_id(make_store: StoreFactory) -> None:
    with pytest.raises(InvalidUserId):
        make_store().create_person_token("../../etc")


def test_person_tokens_are_kept_as_hashes_only(postgres_url: str) -> None:
    store = PostgresTokenStore(postgres_url)
    try:
        token, _ = store.create_person_token("alice")
    finally:
        store.close()
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT * FROM auth_person_tokens").fetchall()
    assert token not in repr(rows) and fingerprint(token) in repr(rows)


# -- browser sessions --------------------------------------------------------------
def sessions_of(tokens: TokenStorage, capacity: int = 10_000) -> BrowserSessions:
    if isinstance(tokens, PostgresTokenStore):
        return PostgresSessionStore(tokens, 3600, capacity=capacity)
    return SessionStore(tokens, 3600, capacity=capacity)


def person(tokens: TokenStorage, user: str) -> TokenMatch:
    token, _ = tokens.create_person_token(user)
    match = tokens.identify(token)
    assert match is not None
    return match


def test_sessions_are_kept_where_the_tokens_are(make_store: StoreFactory,
                                                backend: str) -> None:
    expected = PostgresSessionStore if backend == "postgresql" else SessionStore
    assert isinstance(session_store(make_store(), 3600), expected)


def test_a_session_opens_until_it_ends_or_its_token_is_revoked(make_store: StoreFactory,
                                                               ) -> None:
    tokens = make_store()
    sessions = sessions_of(tokens)
    alice = person(tokens, "alice")
    key = sessions.create(alice)
    assert sessions.lookup(key) == alice
    assert sessions.lookup("not-a-session") is None
    assert sessions.end(key) is True and sessions.lookup(key) is None
    again = sessions.create(alice)
    tokens.revoke(user="alice")
    assert sessions.lookup(again) is None


def test_a_token_keeps_ten_sessions_its_own_oldest_going_first(make_store: StoreFactory,
                                                               ) -> None:
    tokens = make_store()
    sessions = sessions_of(tokens)
    alice, bob = person(tokens, "alice"), person(tokens, "bob")
    bobs = sessions.create(bob)
    keys = [sessions.create(alice) for _ in range(12)]
    assert [sessions.lookup(k) is not None for k in keys] == [False] * 2 + [True] * 10
    assert sessions.lookup(bobs) == bob


def test_a_full_table_refuses_rather_than_signing_out_another(make_store: StoreFactory,
                                                              ) -> None:
    tokens = make_store()
    sessions = sessions_of(tokens, capacity=2)
    alice, bob, carol = (person(tokens, u) for u in ("alice", "bob", "carol"))
    kept = [sessions.create(alice), sessions.create(bob)]
    with pytest.raises(SessionTableFull):
        sessions.create(carol)
    assert [sessions.lookup(k) for k in kept] == [alice, bob]
    tokens.revoke(user="bob")  # a revoked token's session makes room
    assert sessions.lookup(sessions.create(carol)) == carol


def test_a_session_made_on_one_worker_opens_another(postgres_url: str) -> None:
    first, second = PostgresTokenStore(postgres_url), PostgresTokenStore(postgres_url)
    try:
        alice = person(first, "alice")
        key = PostgresSessionStore(first, 3600).create(alice)
        assert PostgresSessionStore(second, 3600).lookup(key) == alice
        assert PostgresSessionStore(second, 3600).end(key)
        assert PostgresSessionStore(first, 3600).lookup(key) is None
    finally:
        first.close()
        second.close()
