"""One process per data dir, and how ``omoide memory`` finds the server that holds it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from omoide.data_dir_owner import (
    SERVER_FILE,
    DataDirBusy,
    DataDirClaim,
    RunningServer,
    find_server,
)

HOLD = """
import sys, time
from pathlib import Path
from omoide.data_dir_owner import DataDirClaim
claim = DataDirClaim.acquire(Path(sys.argv[1]), sys.argv[2])
if sys.argv[2] == "omoide serve":
    claim.publish_server("http://127.0.0.1:1")
print("held", flush=True)
time.sleep(60)
"""


def hold_in_another_process(data_dir: Path, command: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(data_dir), command],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_nothing_holds_a_fresh_data_dir(tmp_path: Path) -> None:
    assert find_server(tmp_path) is None


def test_a_server_is_found_with_its_url_while_it_holds_the_data_dir(tmp_path: Path) -> None:
    with DataDirClaim.acquire(tmp_path, "omoide serve") as claim:
        claim.publish_server("http://127.0.0.1:8003")
        found = find_server(tmp_path)
        assert found == RunningServer("http://127.0.0.1:8003", os.getpid(),
                                      found.started_at if found else "")
        assert (tmp_path / SERVER_FILE).stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / SERVER_FILE).exists()
    assert find_server(tmp_path) is None


def test_a_second_claim_is_told_who_holds_the_data_dir(tmp_path: Path) -> None:
    proc = hold_in_another_process(tmp_path, "omoide memory import")
    try:
        with pytest.raises(DataDirBusy, match=f"omoide memory import \\(pid {proc.pid}\\)"):
            DataDirClaim.acquire(tmp_path, "omoide serve", wait_s=0.1)
        with pytest.raises(DataDirBusy):
            find_server(tmp_path)
    finally:
        proc.kill()
        proc.wait()


def test_a_server_killed_with_sigkill_leaves_no_live_claim(tmp_path: Path) -> None:
    proc = hold_in_another_process(tmp_path, "omoide serve")
    found = find_server(tmp_path)
    assert found is not None and found.pid == proc.pid
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert json.loads((tmp_path / SERVER_FILE).read_text())["pid"] == proc.pid  # left behind
    assert find_server(tmp_path) is None                                          # but stale
    assert not (tmp_path / SERVER_FILE).exists()
    DataDirClaim.acquire(tmp_path, "omoide serve").release()
