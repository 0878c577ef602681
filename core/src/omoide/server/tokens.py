"""The tokens that open the management API: one admin token, per-person tokens.

Both live in ``<data_dir>/auth/`` (a 0700 folder), written atomically with mode 0600:

- ``admin.token``: the admin token itself, created at first start. It is kept in clear
  text so ``omoide token show`` can print it; whoever can read the data dir owns omoide
  anyway. ``omoide token rotate`` replaces it.
- ``person-tokens.json``: one entry per person token: an id, the person, a label, when
  it was made, and the SHA-256 of the token. The token itself is shown once, when it is
  created, and never stored.

A running server re-reads both files when they change on disk (one ``stat`` per
authenticated request), so a rotation or a revocation from the CLI takes effect at once.
Tokens carry a recognisable prefix (``omoide_admin_``, ``omoide_user_``) so log
redaction and secret scanners can find them.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import tempfile
import threading
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from omoide.errors import OmoideError
from omoide.user_ids import validate_user_id

log = logging.getLogger("omoide.server.auth")

ADMIN_PREFIX = "omoide_admin_"
PERSON_PREFIX = "omoide_user_"
TOKEN_PATTERN = re.compile(r"omoide_(?:admin|user)_[A-Za-z0-9_-]{8,}")
"""What an omoide token looks like (log redaction uses it)."""

AUTH_DIR = "auth"
ADMIN_FILE = "admin.token"
PERSON_FILE = "person-tokens.json"
_MAX_TOKEN_LENGTH = 200

Role = Literal["admin", "person"]


class TokenFileError(OmoideError):
    """A token file exists but cannot be read or parsed."""


@dataclass(frozen=True)
class PersonToken:
    """What is kept of a person token (never the token itself)."""

    id: str
    user: str
    created_at: str
    label: str
    sha256: str


@dataclass(frozen=True)
class TokenMatch:
    """Who a presented token belongs to; ``fingerprint`` identifies the token (its
    SHA-256), so sessions made from it end when it is rotated or revoked."""

    role: Role
    user: str | None
    fingerprint: str


class TokenStoreUnavailable(OmoideError):
    """The shared token database does not answer: no token can be checked just now (the
    request is refused with 503, never let through on an old answer)."""


class TokenStorage(Protocol):
    """What the guard, the sign-in and ``omoide token`` use of a token store: the files
    of one data dir (:class:`TokenStore`) or the tables every worker shares
    (:class:`omoide.server.postgres_tokens.PostgresTokenStore`)."""

    def ensure_admin_token(self) -> bool: ...
    def admin_token(self) -> str: ...
    def rotate_admin_token(self) -> str: ...
    def create_person_token(self, user: str, label: str = "") -> tuple[str, PersonToken]: ...
    def person_tokens(self, user: str | None = None) -> list[PersonToken]: ...
    def revoke(self, *, token_id: str | None = None, user: str | None = None,
               ) -> list[PersonToken]: ...
    def identify(self, token: str) -> TokenMatch | None: ...
    def still_valid(self, match: TokenMatch) -> bool: ...
    def close(self) -> None:
        """Release what the store holds open (a database pool)."""
        ...


def fingerprint(token: str) -> str:
    """The SHA-256 (hex) of a token: what is stored and compared."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by the owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class TokenStore:
    """The admin token and the person tokens of one data dir."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = Path(data_dir) / AUTH_DIR
        self.admin_path = self.dir / ADMIN_FILE
        self.person_path = self.dir / PERSON_FILE
        self._lock = threading.Lock()
        self._admin_stamp: tuple[int, int, int] | None = None
        self._admin_fingerprint: str | None = None
        self._person_stamp: tuple[int, int, int] | None = None
        self._persons: dict[str, PersonToken] = {}

    def close(self) -> None:
        """Nothing to release: the tokens are files."""

    # -- the admin token -------------------------------------------------------------
    def ensure_admin_token(self) -> bool:
        """Create the admin token if there is none; True when one was created.

        An existing file readable by others is tightened to 0600 (with a warning).
        """
        with self._lock:
            if self.admin_path.exists():
                mode = self.admin_path.stat().st_mode & 0o777
                if mode & 0o077:
                    os.chmod(self.admin_path, 0o600)
                    log.warning("%s was readable by others (mode %o); now 0600",
                                self.admin_path, mode)
                return False
            _write_private(self.admin_path, ADMIN_PREFIX + secrets.token_urlsafe(32) + "\n")
        log.info("created the admin token in %s (print it with `omoide token show`)",
                 self.admin_path)
        return True

    def admin_token(self) -> str:
        """The admin token (created if there is none yet)."""
        self.ensure_admin_token()
        token = self._read_admin()
        if token is None:
            raise TokenFileError(f"{self.admin_path} is empty; run `omoide token rotate`")
        return token

    def rotate_admin_token(self) -> str:
        """Replace the admin token; the old one (and its browser sessions) stop working."""
        token = ADMIN_PREFIX + secrets.token_urlsafe(32)
        with self._lock:
            _write_private(self.admin_path, token + "\n")
        return token

    def _read_admin(self) -> str | None:
        try:
            text = self.admin_path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenFileError(f"cannot read {self.admin_path}: {exc}") from exc
        return text or None

    # -- person tokens ---------------------------------------------------------------
    def create_person_token(self, user: str, label: str = "") -> tuple[str, PersonToken]:
        """A new token for ``user``; returns the token (shown once) and its record."""
        validate_user_id(user)
        token = PERSON_PREFIX + secrets.token_urlsafe(32)
        entry = PersonToken(id=secrets.token_hex(4), user=user,
                            created_at=datetime.now().astimezone().isoformat(timespec="seconds"),
                            label=label[:100], sha256=fingerprint(token))
        with self._lock:
            entries = self._load_persons_file()
            entries.append(entry)
            self._save_persons(entries)
        return token, entry

    def person_tokens(self, user: str | None = None) -> list[PersonToken]:
        """Person tokens (all, or ``user``'s), oldest first."""
        with self._lock:
            entries = self._load_persons_file()
        return [e for e in entries if user is None or e.user == user]

    def revoke(self, *, token_id: str | None = None, user: str | None = None,
               ) -> list[PersonToken]:
        """Revoke one token by id, or every token of ``user``; returns what was revoked."""
        if token_id is None and user is None:
            raise ValueError("name a token id or a user")
        with self._lock:
            entries = self._load_persons_file()
            gone = [e for e in entries if (token_id is not None and e.id == token_id)
                    or (user is not None and e.user == user)]
            if gone:
                self._save_persons([e for e in entries if e not in gone])
        return gone

    def _load_persons_file(self) -> list[PersonToken]:
        try:
            raw = self.person_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(raw)
            return [PersonToken(**item) for item in data["tokens"]]
        except (ValueError, TypeError, KeyError) as exc:
            raise TokenFileError(f"{self.person_path} is not a person token file: {exc}"
                                 ) from exc

    def _save_persons(self, entries: list[PersonToken]) -> None:
        _write_private(self.person_path, json.dumps(
            {"tokens": [asdict(e) for e in entries]}, ensure_ascii=False, indent=1) + "\n")

    # -- checking presented tokens -----------------------------------------------------
    def identify(self, token: str) -> TokenMatch | None:
        """Who ``token`` belongs to, or None. Reads the files again if they changed."""
        if not token or len(token) > _MAX_TOKEN_LENGTH:
            return None
        self._refresh()
        presented = fingerprint(token)
        admin = self._admin_fingerprint
        if admin is not None and hmac.compare_digest(presented, admin):
            return TokenMatch("admin", None, presented)
        entry = self._persons.get(presented)
        if entry is not None:
            return TokenMatch("person", entry.user, presented)
        return None

    def still_valid(self, match: TokenMatch) -> bool:
        """Whether the token behind ``match`` still opens the API (not rotated/revoked)."""
        self._refresh()
        if match.role == "admin":
            return self._admin_fingerprint is not None and hmac.compare_digest(
                match.fingerprint, self._admin_fingerprint)
        entry = self._persons.get(match.fingerprint)
        return entry is not None and entry.user == match.user

    def _refresh(self) -> None:
        admin_stamp = _stamp(self.admin_path)
        person_stamp = _stamp(self.person_path)
        if admin_stamp == self._admin_stamp and person_stamp == self._person_stamp:
            return
        with self._lock:
            if admin_stamp != self._admin_stamp:
                try:
                    token = self._read_admin()
                except TokenFileError as exc:
                    log.error("%s; the admin token is refused until it is fixed", exc)
                    token = None
                self._admin_fingerprint = fingerprint(token) if token else None
                self._admin_stamp = admin_stamp
            if person_stamp != self._person_stamp:
                try:
                    entries = self._load_persons_file()
                except TokenFileError as exc:
                    log.error("%s; person tokens are refused until it is fixed", exc)
                    entries = []
                self._persons = {e.sha256: e for e in entries}
                self._person_stamp = person_stamp
