"""``omoide memory`` while a server runs: the commands go through the server's HTTP API
(found through the data dir), the same commands as without one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from omoide.cli import main
from omoide.config import load_settings
from omoide.data_dir_owner import DataDirClaim
from omoide.plugins import PluginRegistry
from omoide.server.app import create_app
from omoide.testing.auth import admin_headers
from omoide.testing.http import LocalServer

CONFIG = """
embed: {use: fake}
store: {use: fake}
asr: {use: fake}
chat: {use: fake}
tts: {use: fake}
"""
EXPORT = ('{"id": "m1", "text": "あなたは猫のむぎを飼っている。"}\n'
          '{"id": "m2", "text": "あなたはギターの練習をしている。", '
          '"created_at": "2026-09-27T20:00:00+09:00"}\n')


@pytest.fixture
def running(tmp_path: Path, registry: PluginRegistry) -> Iterator[tuple[str, Any]]:
    """A server (in-memory store: only it can hold the memories) holding its data dir,
    as ``omoide serve`` does; yields the config path and a function listing a user's
    memories as the server has them."""
    config = tmp_path / "omoide.yaml"
    data = yaml.safe_load(CONFIG) | {"server": {"data_dir": str(tmp_path / "data")}}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    settings = load_settings(config, registry=registry)
    app = create_app(settings, registry)
    with DataDirClaim.acquire(settings.data_dir, "omoide serve") as claim, \
            LocalServer(app, lifespan="on") as url:
        claim.publish_server(url)

        def memories(user: str) -> list[dict[str, Any]]:
            response = httpx.get(f"{url}/v1/users/{user}/memories", headers=admin_headers(app))
            return list(response.json()["memories"])

        yield str(config), memories


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_import_list_export_and_forget_go_through_the_running_server(
        running: tuple[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, server = running
    export = tmp_path / "export.jsonl"
    export.write_text(EXPORT, encoding="utf-8")
    code, out, _ = run(capsys, "import", "--config", config, "--user", "alice", str(export))
    assert code == 0 and "imported 2 memories" in out
    listed = {m["text"] for m in server("alice")}
    assert listed == {"あなたは猫のむぎを飼っている。", "あなたはギターの練習をしている。"}
    code, out, _ = run(capsys, "list", "--config", config, "--user", "alice", "--json")
    ids = [json.loads(line)["id"] for line in out.splitlines()]
    assert code == 0 and len(ids) == 2
    code, out, _ = run(capsys, "forget", "--config", config, "--user", "alice", ids[0])
    assert code == 0 and len(server("alice")) == 1
    code, out, _ = run(capsys, "export", "--config", config, "--user", "alice")
    assert code == 0 and len(out.splitlines()) == 1


def test_importing_the_same_file_twice_through_the_server_skips_it(
        running: tuple[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, _ = running
    export = tmp_path / "export.jsonl"
    export.write_text(EXPORT, encoding="utf-8")
    run(capsys, "import", "--config", config, "--user", "alice", str(export))
    code, out, _ = run(capsys, "import", "--config", config, "--user", "alice", str(export))
    assert code == 0 and "imported 0 memories" in out and "skipped 2" in out


def test_a_bad_import_through_the_server_lists_every_line_and_imports_nothing(
        running: tuple[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, server = running
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(EXPORT.encode() + b'{"text": "x", "entities": 5}\n\xff\n')
    code, _, err = run(capsys, "import", "--config", config, "--user", "alice", str(bad))
    assert code == 1
    assert "line 3: entities" in err and "line 4: not valid UTF-8" in err
    assert "Traceback" not in err
    assert server("alice") == []


def test_reembed_asks_to_stop_the_server_first(running: tuple[str, Any],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config, _ = running
    code, _, err = run(capsys, "reembed", "--config", config)
    assert code == 1 and "stop it first" in err


def test_pending_goes_through_the_server(running: tuple[str, Any],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    config, _ = running
    code, out, _ = run(capsys, "pending", "--config", config)
    assert code == 0 and out.strip() == "nothing pending"


def test_an_invalid_user_id_is_refused_by_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["memory", "list", "--config", "unused.yaml", "--user", "../../etc"])
    assert exited.value.code == 2
    assert "user id '../../etc'" in capsys.readouterr().err
