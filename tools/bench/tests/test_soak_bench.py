"""``omoide bench soak`` runs a short soak and reports nobody stuck, nothing lost or doubled
(its figures are for people to read; the test checks only what must always hold)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(
    any(__import__("importlib").util.find_spec(m) is None
        for m in ("omoide_store_qdrant", "omoide_standins")),
    reason="needs the store_qdrant and standins plugins")


def test_a_short_soak_leaves_nobody_stuck_and_stores_each_fact_once(
        tmp_path: Path, omoide_cli: Any) -> None:
    config = tmp_path / "soak.yaml"
    config.write_text(f"""
server: {{data_dir: {tmp_path / 'unused'}}}
asr: {{use: fake}}
embed: {{use: fake, dims: 64}}
store: {{use: qdrant, path: {tmp_path / 'unused' / 'qdrant'}}}
chat: {{use: standin}}
tts: {{use: fake}}
""", encoding="utf-8")
    run = omoide_cli("bench", "soak", "--config", str(config), "--users", "3", "--seconds",
                     "3", "--json", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["turns"]["count"] > 0 and report["turns"]["failed"] == 0
    assert report["extraction"]["stuck_people"] == 0
    assert report["audit"]["memories"] > 0
    assert (report["audit"]["missing"], report["audit"]["extra"]) == (0, 0)
    assert not (tmp_path / "unused").exists()    # the soak ran in a directory of its own
