"""The token files: private, hashed for people, re-read when they change."""

from __future__ import annotations

from pathlib import Path

import pytest

from omoide.server.tokens import TokenStore, fingerprint


def test_the_admin_token_is_made_once_and_kept_private(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    assert store.ensure_admin_token() is True
    assert store.ensure_admin_token() is False
    token = store.admin_token()
    assert token.startswith("omoide_admin_") and len(token) > 40
    assert store.admin_path.stat().st_mode & 0o777 == 0o600
    assert store.dir.stat().st_mode & 0o777 == 0o700


def test_an_admin_token_file_readable_by_others_is_tightened(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    store.ensure_admin_token()
    store.admin_path.chmod(0o644)
    store.ensure_admin_token()
    assert store.admin_path.stat().st_mode & 0o777 == 0o600


def test_person_tokens_are_stored_as_hashes_only(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token, entry = store.create_person_token("alice", "phone")
    kept = store.person_path.read_text(encoding="utf-8")
    assert token not in kept and fingerprint(token) in kept
    assert store.person_path.stat().st_mode & 0o777 == 0o600
    assert entry.user == "alice" and entry.label == "phone"


def test_a_token_identifies_its_owner(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    alice, _ = store.create_person_token("alice")
    admin = store.admin_token()
    match = store.identify(alice)
    assert match is not None and (match.role, match.user) == ("person", "alice")
    admin_match = store.identify(admin)
    assert admin_match is not None and admin_match.role == "admin"
    assert store.identify("omoide_user_guess") is None
    assert store.identify("") is None
    assert store.identify("x" * 10_000) is None


def test_changes_made_by_another_process_count_at_once(tmp_path: Path) -> None:
    server, cli = TokenStore(tmp_path), TokenStore(tmp_path)
    old_admin = server.admin_token()
    alice, entry = cli.create_person_token("alice")
    assert server.identify(alice) is not None
    cli.rotate_admin_token()
    assert server.identify(old_admin) is None
    cli.revoke(token_id=entry.id)
    assert server.identify(alice) is None


def test_revoking_by_user_revokes_all_of_their_tokens(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    store.create_person_token("alice")
    store.create_person_token("alice")
    _, bob = store.create_person_token("bob")
    assert len(store.revoke(user="alice")) == 2
    assert store.person_tokens() == [bob]


def test_a_person_token_needs_a_valid_user_id(tmp_path: Path) -> None:
    from omoide.user_ids import InvalidUserId

    with pytest.raises(InvalidUserId):
        TokenStore(tmp_path).create_person_token("../../etc")
