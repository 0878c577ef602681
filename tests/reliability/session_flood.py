"""Can one person's token sign another person out? A measurement against a real server.

Alice signs in from her browser; then Bob's token signs in ``--sign-ins`` times as fast
as one client can (from another source address, 127.0.0.2, so the per-source limit is
not what stops him). Afterwards the script asks, with Alice's cookie, whether she is
still signed in, and prints what the sign-ins got::

    .venv/bin/python tests/reliability/session_flood.py --sign-ins 10001
    .venv/bin/python tests/reliability/session_flood.py --sign-ins 10001 --without-rate-limits

``--without-rate-limits`` lifts the sign-in limits (where the server has them) to show
what the per-token session cap alone does.

The server is :func:`omoide.server.app.create_app` under a real uvicorn on 127.0.0.1
with the test doubles for every model (fake ASR/chat/TTS, hash embedder, in-memory
store); only the session routes and the guard are under test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import yaml

CONFIG = """
vad: {use: fake}
asr: {use: fake}
embed: {use: fake}
store: {use: fake}
chat: {use: fake}
tts: {use: fake}
"""


def build_app(data_dir: Path) -> Any:
    from omoide.config import parse_envelope, validate_components, wanted_components
    from omoide.plugins import build_registry
    from omoide.server.app import create_app

    data = yaml.safe_load(CONFIG) | {"server": {"data_dir": str(data_dir)}}
    envelope = parse_envelope(data)
    registry = build_registry(wanted_components(envelope))
    return create_app(validate_components(envelope, registry), registry)


def sign_in(client: httpx.Client, url: str, token: str) -> httpx.Response:
    return client.post(f"{url}/v1/session", json={"token": token},
                       headers={"origin": url})


def signed_in(url: str, cookie: str) -> bool:
    with httpx.Client(cookies={"omoide_session": cookie}, timeout=30) as client:
        return bool(client.get(f"{url}/v1/session").json()["signed_in"])


def measure(sign_ins: int) -> dict[str, Any]:
    from omoide.testing.auth import token_store
    from omoide.testing.http import LocalServer

    with tempfile.TemporaryDirectory() as folder:
        app = build_app(Path(folder))
        alice_token, _ = token_store(app).create_person_token("alice")
        bob_token, _ = token_store(app).create_person_token("bob")
        with LocalServer(app, lifespan="on") as url:
            with httpx.Client(timeout=30) as alice:
                assert sign_in(alice, url, alice_token).status_code == 200
                alice_cookie = alice.cookies["omoide_session"]
            statuses: Counter[int] = Counter()
            bob_first = None
            started = time.perf_counter()
            transport = httpx.HTTPTransport(local_address="127.0.0.2")
            with httpx.Client(timeout=30, transport=transport) as bob:
                for _ in range(sign_ins):
                    response = sign_in(bob, url, bob_token)
                    statuses[response.status_code] += 1
                    if bob_first is None and response.status_code == 200:
                        bob_first = response.cookies.get("omoide_session")
                    bob.cookies.clear()
            seconds = time.perf_counter() - started
            return {"sign_ins": sign_ins, "statuses": dict(sorted(statuses.items())),
                    "seconds": round(seconds, 1),
                    "alice_still_signed_in": signed_in(url, alice_cookie),
                    "bobs_first_session_kept": bool(bob_first) and signed_in(url, bob_first)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sign-ins", type=int, default=10_001)
    parser.add_argument("--without-rate-limits", action="store_true")
    args = parser.parse_args(argv)
    if args.without_rate_limits:
        from omoide.server import session_routes
        limits = session_routes.session_router.__kwdefaults__ or {}
        for name in ("per_source", "per_token"):
            if name in limits:
                limits[name] = 10**9
    print(json.dumps(measure(args.sign_ins), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
