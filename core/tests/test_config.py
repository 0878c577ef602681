"""Config validation: every problem at once, with YAML paths and suggestions."""

from __future__ import annotations

from pathlib import Path

import pytest

from omoide.config import load_settings, load_yaml, validate_config
from omoide.errors import ConfigError
from omoide.plugins import build_registry

FAKES = """
asr: {use: fake}
embed: {use: fake, dims: 32}
store: {use: fake}
chat: {use: fake}
tts: {use: fake}
"""


@pytest.fixture(scope="module")
def registry():  # type: ignore[no-untyped-def]
    return build_registry([(k, "fake") for k in ("vad", "asr", "embedder", "store", "chat",
                                                  "tts")] + [("memory_engine", "robust")])


def _check(text: str, registry, environ=None):  # type: ignore[no-untyped-def]
    return validate_config(load_yaml(text), source="t.yaml", registry=registry,
                           environ=environ or {})


def _problems(text: str, registry, environ=None) -> dict[str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as info:
        _check(text, registry, environ)
    return {p.path: p.message for p in info.value.problems}


def test_a_valid_config_yields_every_stage(registry) -> None:  # type: ignore[no-untyped-def]
    settings = _check(FAKES, registry)
    assert set(settings.components) == {"asr", "embed", "store", "chat", "tts",
                                        "memory.retrieve", "memory.extract"}
    assert settings.components["embed"].config.dims == 32  # type: ignore[attr-defined]


def test_invalid_yaml_names_line_and_column(registry) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="line 2"):
        load_yaml("asr: {use: fake\nchat: [")


def test_missing_sections_are_all_listed(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems("asr: {use: fake}\n", registry)
    assert {"embed", "store", "chat", "tts"} <= set(problems)


def test_unknown_top_level_key_suggests_the_right_one(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES + "assistent: {name: x}\n", registry)
    assert "did you mean 'assistant'" in problems["assistent"]


def test_unknown_nested_key_has_its_full_path(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES + "memory: {extraction: {idle_minute: 3}}\n", registry)
    assert "did you mean 'idle_minutes'" in problems["memory.extraction.idle_minute"]


def test_unknown_component_lists_the_available_ones(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES.replace("tts: {use: fake}", "tts: {use: faek}"), registry)
    assert "did you mean 'fake'" in problems["tts.use"]
    assert "available: fake" in problems["tts.use"]


def test_component_options_are_validated_with_paths(registry) -> None:  # type: ignore[no-untyped-def]
    text = FAKES.replace("embed: {use: fake, dims: 32}", "embed: {use: fake, dims: -1, dimz: 3}")
    text = text.replace("chat: {use: fake}", "chat: {use: fake, temperature: hot}")
    problems = _problems(text, registry)
    assert "embed.dims" in problems
    assert "did you mean 'dims'" in problems["embed.dimz"]
    assert "chat.temperature" in problems


def test_envelope_and_component_problems_are_reported_together(registry) -> None:  # type: ignore[no-untyped-def]
    text = FAKES.replace("tts: {use: fake}", "tts: {use: fake, latency_ms: -5}")
    problems = _problems(text + "server: {port: 70000}\n", registry)
    assert "server.port" in problems and "tts.latency_ms" in problems


def test_missing_env_secret_names_the_variable(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES.replace("chat: {use: fake}",
                                       "chat: {use: fake, reply: {$env: OMOIDE_TEST_REPLY}}"),
                         registry, {})
    assert "OMOIDE_TEST_REPLY is not set" in problems["chat.reply"]


def test_env_secret_is_substituted(registry) -> None:  # type: ignore[no-untyped-def]
    settings = _check(FAKES.replace("chat: {use: fake}",
                                    "chat: {use: fake, reply: {$env: OMOIDE_TEST_REPLY}}"),
                      registry, {"OMOIDE_TEST_REPLY": "[happy] やあ"})
    assert settings.components["chat"].config.reply == "[happy] やあ"  # type: ignore[attr-defined]


def test_secret_fields_refuse_literal_values() -> None:
    from pydantic import BaseModel

    from omoide.config import EnvValue, Secret

    class WithKey(BaseModel):
        api_key: Secret = None

    with pytest.raises(Exception, match=r"\{\$env: NAME\}"):
        WithKey(api_key="sk-literal")
    assert WithKey(api_key=EnvValue("sk", "KEY")).api_key.get_secret_value() == "sk"  # type: ignore[union-attr]


def test_unknown_timezone_is_rejected(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES + "assistant: {timezone: Mars/Olympus}\n", registry)
    assert "unknown time zone" in problems["assistant.timezone"]


def test_devices_are_indexed_in_paths(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES + "devices: [{use: nosuchdevice}]\n", registry)
    assert "devices[0].use" in problems


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "missing.yaml")
