"""``omoide memory``: end to end through the CLI, over the test doubles and Qdrant local."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omoide.cli import main


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "omoide.yaml"
    path.write_text(f"""
server: {{data_dir: {tmp_path / 'data'}}}
asr: {{use: fake}}
embed: {{use: fake, dims: 128}}
store: {{use: fake}}
chat: {{use: fake, reply: '{{"facts": [{{"text": "あなたは猫のむぎを飼っている。", "kind": "profile"}}]}}'}}
tts: {{use: fake}}
""", encoding="utf-8")
    return path


def qdrant_config(tmp_path: Path) -> Path:
    """A config on Qdrant local mode in ``tmp_path`` (fakes for every other stage)."""
    config = tmp_path / "q.yaml"
    config.write_text(f"""
server: {{data_dir: {tmp_path / 'data'}}}
asr: {{use: fake}}
embed: {{use: fake, dims: 128}}
store: {{use: qdrant, path: {tmp_path / 'qdrant'}}}
chat: {{use: fake}}
tts: {{use: fake}}
""", encoding="utf-8")
    return config


def test_memory_commands_work_on_the_configured_store(config: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # The store double forgets between processes, so one command per fact: pending and
    # extract use the journal (SQLite), which persists.
    import asyncio
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from omoide.config import load_settings
    from omoide.memory.journal.exchange_log import Journal
    from omoide.types import Exchange

    settings = load_settings(config)
    journal = Journal(settings.data_dir / settings.memory.journal)
    journal.open()
    asyncio.run(journal.append(Exchange("e1", "u1", "猫のむぎを飼ってるんだ", "かわいい",
                                        datetime(2026, 9, 27, 20, 0, tzinfo=ZoneInfo("Asia/Tokyo")))))
    journal.close()
    assert main(["memory", "pending", "--config", str(config)]) == 0
    assert "u1: 1 exchanges" in capsys.readouterr().out
    assert main(["memory", "extract", "--config", str(config), "--user", "u1"]) == 0
    assert "1 memories stored" in capsys.readouterr().out
    assert main(["memory", "pending", "--config", str(config)]) == 0
    assert "nothing pending" in capsys.readouterr().out
    assert main(["memory", "show", "--config", str(config), "--user", "u1", "nope"]) == 1


@pytest.mark.skipif(__import__("importlib").util.find_spec("omoide_store_qdrant") is None,
                    reason="plugin store_qdrant is not installed")
def test_memory_control_commands_on_qdrant_local(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    config = qdrant_config(tmp_path)
    export = tmp_path / "export.jsonl"
    export.write_text(json.dumps({"id": "x1", "text": "あなたはギターの練習をしている。",
                                  "created_at": "2026-09-27T20:00:00+09:00"},
                                 ensure_ascii=False) + "\n", encoding="utf-8")
    base = ["--config", str(config), "--user", "u1"]
    assert main(["memory", "import", *base, str(export)]) == 0
    capsys.readouterr()
    assert main(["memory", "list", *base, "--json"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    memory_id = json.loads(line)["id"]
    assert main(["memory", "search", *base, "ギター"]) == 0
    assert memory_id in capsys.readouterr().out
    assert main(["memory", "list", "--config", str(config), "--user", "u2"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["memory", "export", *base]) == 0
    assert "ギター" in capsys.readouterr().out
    assert main(["memory", "forget", *base, memory_id]) == 0
    capsys.readouterr()
    assert main(["memory", "list", *base]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.skipif(__import__("importlib").util.find_spec("omoide_store_qdrant") is None,
                    reason="plugin store_qdrant is not installed")
def test_memory_profile_commands_show_set_and_forget(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    config = qdrant_config(tmp_path)
    base = ["memory", "profile", "--config", str(config), "--user", "u1"]
    assert main([*base[:2], "set", *base[2:], "あなたは卵アレルギーがある。"]) == 0
    fact_id = capsys.readouterr().out.split()[0]
    assert main([*base[:2], "set", *base[2:], "あなたは明日（2026年12月1日）歯医者に行く。"]) == 1
    assert "dated" in capsys.readouterr().err
    assert main([*base[:2], "show", *base[2:], "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [(f["id"], f["category"]) for f in shown["facts"]] == [(fact_id, "health")]
    assert main([*base[:2], "forget", *base[2:], fact_id, "--keep-memory"]) == 0
    capsys.readouterr()
    assert main([*base[:2], "show", *base[2:], "--all"]) == 0
    out = capsys.readouterr().out
    assert "0 facts" in out and "卵アレルギー" in out     # kept, as an episodic memory
