"""Half-sent requests against a real ``omoide serve``: what they cost and who is still
served (issue 27, point 3). A script, not a test: it reports, it asserts nothing.

    .venv/bin/python tests/reliability/flood_half_sent.py --connections 2500 \\
        --sources 1 --server-nofile 2048 --hold 30

It starts ``omoide serve`` (stand-in stages, Qdrant local store) with the open-file
limit ``--server-nofile``, opens ``--connections`` sockets from ``--sources`` loopback
addresses (127.0.0.1, 127.0.0.3, ...) that each send half a request head and then
nothing, and every second for ``--hold`` seconds records the server's open fds, whether
a turn from another address (127.0.0.2) is answered, and how many flood sockets the
server has closed. Then it closes the flood and times how long until a turn from
127.0.0.1 is answered. Run it with ``PYTHONPATH=<other checkout>/core/src`` to measure
another version of the core.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HALF = b"POST /v1/turns HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-a: "


def start(data: Path, nofile: int) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    config = data.with_name("config.yaml")
    config.write_text(f"server: {{host: 127.0.0.1, port: {port}, data_dir: {data}}}\n"
                      f"asr: {{use: fake}}\nembed: {{use: fake, dims: 64}}\n"
                      f"store: {{use: qdrant, path: {data}/qdrant}}\nchat: {{use: standin}}\n"
                      f"tts: {{use: fake}}\n", encoding="utf-8")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    log = open(data.with_name("serve.log"), "wb")  # noqa: SIM115 - lives with the process
    process = subprocess.Popen([sys.executable, "-m", "omoide.cli", "serve", "--config",
                                str(config)], stdout=log, stderr=log, preexec_fn=limit)
    for _ in range(900):
        with contextlib.suppress(httpx.HTTPError, ValueError):
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["status"] \
                    == "ready":
                return process, port
        time.sleep(0.2)
    raise SystemExit("omoide serve did not become ready")


def turn(port: int, data: Path, source: str, timeout: float = 5.0) -> str:
    token = (data / "auth" / "admin.token").read_text().strip()
    try:
        with httpx.Client(transport=httpx.HTTPTransport(local_address=source)) as http:
            r = http.post(f"http://127.0.0.1:{port}/v1/turns", timeout=timeout,
                          headers={"Authorization": f"Bearer {token}"},
                          json={"user": "alice", "text": "こんにちは"})
        return str(r.status_code)
    except httpx.HTTPError as exc:
        return type(exc).__name__


def flood(port: int, count: int, sources: int) -> list[socket.socket]:
    addresses = ["127.0.0.1"] + [f"127.0.0.{i}" for i in range(3, sources + 2)]
    out = []
    for i in range(count):
        s = socket.socket()
        s.setblocking(True)
        s.bind((addresses[i % sources], 0))
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(HALF)
        except OSError:
            pass
        out.append(s)
    return out


def closed_by_server(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the server answered or closed (those are closed here)."""
    closed = 0
    for s in sockets:
        try:
            s.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            continue           # still open, nothing said
        except OSError:
            pass               # reset by the server
        closed += 1
        s.close()
    return closed


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=2500)
    parser.add_argument("--sources", type=int, default=1)
    parser.add_argument("--server-nofile", type=int, default=2048)
    parser.add_argument("--hold", type=float, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        process, port = start(data, args.server_nofile)
        try:
            report = run(process, port, data, args)
        finally:
            process.terminate()
            process.wait(timeout=60)
        print(json.dumps(report, indent=1))


def run(process: subprocess.Popen[bytes], port: int, data: Path,
        args: argparse.Namespace) -> dict[str, object]:
    baseline = fds(process.pid)
    first = turn(port, data, "127.0.0.2", timeout=60)
    started = time.monotonic()
    sockets = flood(port, args.connections, args.sources)
    opened_s = time.monotonic() - started
    samples = []
    closed = 0
    while time.monotonic() - started < args.hold:
        t = time.monotonic()
        answer = turn(port, data, "127.0.0.2")
        closed += closed_by_server([s for s in sockets if s.fileno() >= 0])
        samples.append({"t": round(t - started, 1), "server_fds": fds(process.pid),
                        "turn_from_127.0.0.2": answer, "flood_closed_by_server": closed})
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t)))
    released = time.monotonic()
    for s in sockets:
        s.close()
    recovered = None
    while time.monotonic() - released < 120:
        if turn(port, data, "127.0.0.1") == "200":
            recovered = round(time.monotonic() - released, 2)
            break
        time.sleep(0.2)
    refusal_lines = [line for line in data.with_name("serve.log").read_text(
        errors="replace").splitlines() if "refused connections" in line
        or "did not finish" in line]
    return {"connections": args.connections, "sources": args.sources,
            "server_nofile": args.server_nofile, "baseline_fds": baseline,
            "turn_before_flood": first, "flood_opened_in_s": round(opened_s, 2),
            "samples": samples, "turn_from_127.0.0.1_after_flood_closed_in_s": recovered,
            "server_log_lines_about_it": refusal_lines[:5],
            "turns_answered_during_flood": sum(s["turn_from_127.0.0.2"] == "200"
                                               for s in samples),
            "turn_attempts_during_flood": len(samples)}


if __name__ == "__main__":
    main()
