"""``omoide eval``: end to end through the CLI, over the test doubles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omoide.cli import main

SCENARIO = {
    "id": "s1", "user": "u1", "now": "2026-09-27T21:05:00+09:00",
    "memories": [
        {"id": "m1", "text": "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。",
         "created_at": "2026-09-27T20:50:00+09:00"},
        {"id": "m2", "text": "あなたは最近、仕事終わりにギターの練習をしている。",
         "created_at": "2026-09-20T20:50:00+09:00"}],
    "queries": [
        {"group": "g1", "text": "週末の予定覚えてる?", "expect": ["m1"]},
        {"group": "g1", "text": "週末の予定覚えてる？", "expect": ["m1"]},
        {"group": "g2", "text": "最近私が練習してることって何？", "expect": ["m2"]},
        {"group": "n1", "text": "日本で一番高い山は？", "expect": []}],
}
LOCOMO = [{
    "sample_id": "c1",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "I started learning the violin."}],
    },
    "qa": [{"question": "What is the name of Ann's puppy?", "answer": "Biscuit",
            "evidence": ["D1:1"], "category": 4},
           {"question": "What did Bob say about his spaceship?", "evidence": ["D1:2"],
            "category": 5}],
}]


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


def test_eval_prints_the_documented_json(config: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    probe = tmp_path / "probe.jsonl"
    probe.write_text(json.dumps(SCENARIO, ensure_ascii=False) + "\n", encoding="utf-8")
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps(LOCOMO), encoding="utf-8")
    code = main(["eval", "--config", str(config), "--data", str(probe), "--data", str(locomo),
                 "--json", "--no-progress"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    robust = report["engines"]["robust"]
    assert set(report["engines"]) == {"baseline", "robust"}
    assert (robust["hit_at_3"], robust["false_injection_rate"], robust["flip_rate"]) == (1.0, 0.0,
                                                                                        0.0)
    assert set(robust["latency_ms"]) == {"p50", "p95"}
    assert robust["locomo"]["recall_at_5"]["4"] == 1.0
    assert "store double" in report["store"]


def write_probe(tmp_path: Path, name: str = "probe.jsonl") -> Path:
    probe = tmp_path / name
    probe.write_text(json.dumps(SCENARIO, ensure_ascii=False) + "\n", encoding="utf-8")
    return probe


def test_eval_prints_one_table_per_data_file(config: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    first, second = write_probe(tmp_path, "first.jsonl"), write_probe(tmp_path, "second.jsonl")
    assert main(["eval", "--config", str(config), "--data", str(first), "--data",
                 str(second), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "first.jsonl\n" in out and "second.jsonl\n" in out
    assert out.count("via profile") == 2


def test_eval_reports_profile_hits_apart_from_episodic_ones(
        config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--config", str(config), "--data", str(write_probe(tmp_path)),
                 "--engine", "robust", "--json", "--no-progress"]) == 0
    robust = json.loads(capsys.readouterr().out)["files"]["probe.jsonl"]["engines"]["robust"]
    # the guitar habit is a profile fact: its question is answered by the profile block
    assert robust["profile_only_hit_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert robust["hit_at_3"] == 1.0 and robust["profile_facts_mean"] == 1.0


def test_misses_lists_every_miss_with_its_reason(config: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--config", str(config), "--data", str(write_probe(tmp_path)),
                 "--engine", "baseline", "--json", "--misses", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    misses = report["misses"]["probe.jsonl"]["baseline"]
    baseline = report["files"]["probe.jsonl"]["engines"]["baseline"]
    positives, negatives = 3, 1
    expected = round((1 - baseline["hit_at_3"]) * positives) + \
        round(baseline["false_injection_rate"] * negatives)
    assert len(misses) == expected
    assert all({"query", "expect", "got", "gate"} <= set(m) for m in misses)


def test_speak_asks_what_the_recogniser_heard_and_caches_it(
        config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The fake recogniser hears one general question whatever is said: every positive
    # query then misses, and nothing is injected.
    heard = tmp_path / "heard.yaml"
    heard.write_text(config.read_text(encoding="utf-8").replace(
        "asr: {use: fake}", "asr: {use: fake, text: 日本で一番高い山は？}"), encoding="utf-8")
    cache = tmp_path / "speak.json"
    args = ["eval", "--config", str(heard), "--data", str(write_probe(tmp_path)), "--engine",
            "robust", "--speak", "--speak-cache", str(cache), "--json", "--no-progress"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    robust = report["files"]["probe.jsonl"]["engines"]["robust"]
    assert robust["episodic_hit_at_3"] == 0.0 and robust["false_injection_rate"] == 0.0
    assert report["speak"]["transcribed"] == len(SCENARIO["queries"])
    # (recognisers' text is NFKC-normalised by the core: ？ becomes ?)
    assert set(json.loads(cache.read_text(encoding="utf-8")).values()) == {"日本で一番高い山は?"}
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["speak"]["transcribed"] == 0


def test_eval_refuses_an_engine_no_plugin_registers_and_names_the_registered_ones(
        config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--config", str(config), "--data", str(write_probe(tmp_path)),
                 "--engine", "robst", "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "did you mean 'robust'" in err and "baseline" in err


KINDED = {**SCENARIO, "queries": [
    {**SCENARIO["queries"][0], "kind": "time"}, {**SCENARIO["queries"][1], "kind": "time"},
    {**SCENARIO["queries"][2], "kind": "direct"}, {**SCENARIO["queries"][3], "kind": "none"}]}


def test_queries_with_a_kind_are_also_scored_per_kind(
        config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    probe = tmp_path / "kinds.jsonl"
    probe.write_text(json.dumps(KINDED, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["eval", "--config", str(config), "--data", str(probe), "--engine", "robust",
                 "--json", "--no-progress"]) == 0
    robust = json.loads(capsys.readouterr().out)["files"]["kinds.jsonl"]["engines"]["robust"]
    kinds = robust["kinds"]
    assert list(kinds) == ["direct", "time", "none"]
    assert kinds["time"] == {"queries": 2, "hit_at_3": 1.0, "false_injections": 0,
                             "negatives": 0, "false_injection_rate": None, "flip_rate": 0.0,
                             "groups": 1, "via_recall": 2, "via_profile_only": 0}
    assert kinds["none"]["hit_at_3"] is None and kinds["none"]["negatives"] == 1
    assert kinds["none"]["false_injection_rate"] == 0.0
    assert sum(k["queries"] for k in kinds.values()) == robust["queries"]


def test_the_per_kind_table_follows_its_file_and_only_when_queries_have_kinds(
        config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kinded = tmp_path / "kinds.jsonl"
    kinded.write_text(json.dumps(KINDED, ensure_ascii=False) + "\n", encoding="utf-8")
    plain = write_probe(tmp_path)
    assert main(["eval", "--config", str(config), "--data", str(kinded), "--data", str(plain),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("per kind") == 1 and "kinds.jsonl per kind" in out
    table = out.split("kinds.jsonl per kind")[1].split("probe.jsonl")[0].splitlines()
    assert table[1].split() == ["kind", "engine", "queries", "hit@3", "false", "inj.", "flip",
                                "hits", "via", "recall", "via", "profile", "only"]
    rows = [r.split() for r in table[2:] if r.strip()]
    assert [r[:3] for r in rows] == [["direct", "baseline", "1"], ["direct", "robust", "1"],
                                     ["time", "baseline", "2"], ["time", "robust", "2"],
                                     ["none", "baseline", "1"], ["none", "robust", "1"]]
    none_robust = rows[-1]
    assert none_robust[3] == "-" and none_robust[4:6] == ["0/1", "(0.000)"]
