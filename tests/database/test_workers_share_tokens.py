"""Two ``omoide serve`` workers (real processes, their own data dirs) on one PostgreSQL
database: a person token made with ``omoide token`` opens both at once, a browser
signed in on one is signed in on the other, the token's revocation closes both at once
(its session too), and a turn taken by either is journaled in the one journal."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

CONFIG = """
server: {{data_dir: {data}, host: 127.0.0.1, port: {port}}}
database: {{url: {{$env: OMOIDE_DATABASE_URL}}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
"""


def omoide(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "omoide.cli", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "OMOIDE_DATABASE_URL": url})


@pytest.fixture
def workers(omoide_workers: Any) -> Iterator[list[tuple[str, Path]]]:
    with omoide_workers(2, lambda data, port: CONFIG.format(data=data, port=port)) as served:
        yield list(zip(served.urls, served.configs, strict=True))


def turn(base: str, token: str, text: str) -> int:
    return httpx.post(f"{base}/v1/turns", json={"user": "mika", "text": text},
                      headers={"Authorization": f"Bearer {token}"}, timeout=60).status_code


@pytest.mark.slow
def test_tokens_and_the_journal_are_shared_by_the_workers(
        workers: list[tuple[str, Path]], postgres_url: str) -> None:
    (first, first_config), (second, second_config) = workers
    made = omoide("token", "create", "--config", str(first_config), "--user", "mika",
                  url=postgres_url)
    assert made.returncode == 0, made.stdout + made.stderr
    token = next(w for w in made.stdout.split() if w.startswith("omoide_user_"))
    assert turn(first, token, "週末は箱根に行くよ") == 200
    assert turn(second, token, "温泉が楽しみ") == 200
    signed = httpx.post(f"{first}/v1/session", json={"token": token}, timeout=30)
    cookie = {"Cookie": f"omoide_session={signed.cookies['omoide_session']}"}
    who = httpx.get(f"{second}/v1/session", headers=cookie, timeout=30).json()
    assert (who["signed_in"], who.get("user")) == (True, "mika")
    admin = omoide("token", "show", "--config", str(second_config), url=postgres_url)
    assert admin.stdout.strip() == omoide("token", "show", "--config", str(first_config),
                                          url=postgres_url).stdout.strip()
    listed = omoide("token", "list", "--config", str(second_config), url=postgres_url)
    token_id = listed.stdout.split()[0]
    gone = omoide("token", "revoke", "--config", str(second_config), token_id,
                  url=postgres_url)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert turn(first, token, "もう一度") == 401
    assert turn(second, token, "もう一度") == 401
    assert httpx.get(f"{second}/v1/session", headers=cookie, timeout=30).json() == {
        "signed_in": False}
    with psycopg.connect(postgres_url) as conn:
        said = conn.execute('SELECT user_text FROM exchanges WHERE "user"=%s ORDER BY at_ts',
                            ("mika",)).fetchall()
    assert [r[0] for r in said] == ["週末は箱根に行くよ", "温泉が楽しみ"]
