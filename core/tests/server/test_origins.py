"""Host and Origin policy: the names a server answers to (DNS rebinding)."""

from __future__ import annotations

import pytest

from omoide.server.origins import HostPolicy, split_host_header

POLICY = HostPolicy.build(listen_host="0.0.0.0", public_url="https://omoide.example.org",
                          allowed_hosts=["robot-server", ".home.example"],
                          allowed_origins=["https://console.example"],
                          include_machine_names=False)


@pytest.mark.parametrize(("header", "expected"), [
    ("Example.org:8003", ("example.org", 8003)), ("[::1]:80", ("::1", 80)),
    ("[::1]", ("::1", None)), ("localhost.", ("localhost", None)),
    ("a:b:c", None), ("x/y", None), ("evil@localhost", None), ("host:99999", None),
    ("", None), ("[::1", None),
])
def test_host_headers_are_parsed_strictly(header: str,
                                          expected: tuple[str, int | None] | None) -> None:
    assert split_host_header(header) == expected


@pytest.mark.parametrize("host", ["localhost:8003", "app.localhost", "127.0.0.1", "[::1]:8003",
                                  "10.1.2.3:8003", "omoide.example.org", "ROBOT-SERVER:8003",
                                  "a.home.example", "home.example"])
def test_accepted_hosts(host: str) -> None:
    assert POLICY.host_allowed(host)


@pytest.mark.parametrize("host", [None, "evil.example", "localhost.evil.example",
                                  "omoide.example.org.evil.example", "xhome.example",
                                  "0.0.0.0.evil.example"])
def test_refused_hosts(host: str | None) -> None:
    assert not POLICY.host_allowed(host)


@pytest.mark.parametrize(("origin", "host", "allowed"), [
    ("http://localhost:8003", "localhost:8003", True),
    ("http://localhost:8004", "localhost:8003", False),
    ("http://127.0.0.1:8003", "localhost:8003", False),
    ("https://omoide.example.org", "omoide.example.org", True),     # TLS proxy, no port
    ("https://omoide.example.org", "10.0.0.5:8003", True),          # server.public_url
    ("https://console.example", "localhost:8003", True),            # allowed_origins
    ("null", "localhost:8003", False),
    ("http://localhost:8003/path", "localhost:8003", False),
    ("file://", "localhost", False),
])
def test_origins(origin: str, host: str, allowed: bool) -> None:
    assert POLICY.origin_allowed(origin, host) is allowed
