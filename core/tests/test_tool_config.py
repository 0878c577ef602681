"""The `tools:` and `tool_calls:` sections of the config, and tools built by the runtime."""

from __future__ import annotations

import pytest

from omoide.config import load_yaml, validate_config, wanted_components
from omoide.errors import ConfigError
from omoide.plugins import build_registry
from omoide.runtime import Runtime
from omoide.testing.doubles import ToolDouble

FAKES = """
asr: {use: fake}
embed: {use: fake, dims: 32}
store: {use: fake}
chat: {use: fake}
tts: {use: fake}
"""


@pytest.fixture(scope="module")
def registry():  # type: ignore[no-untyped-def]
    return build_registry([("tool", "fake"), ("asr", "fake"), ("memory_engine", "robust")])


def _problems(text: str, registry) -> dict[str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as info:
        validate_config(load_yaml(text), source="t.yaml", registry=registry, environ={})
    return {p.path: p.message for p in info.value.problems}


def test_listed_tools_are_built_by_the_runtime_in_order(registry) -> None:  # type: ignore[no-untyped-def]
    settings = validate_config(load_yaml(FAKES + "tools: [{use: fake, timeout_s: 2}, "
                                         "{use: fake}]\n"), registry=registry, environ={})
    runtime = Runtime(settings)
    assert [type(t) for t in runtime.tools] == [ToolDouble, ToolDouble]
    assert runtime.tools[0].config.timeout_s == 2
    assert ("tool", "fake") in wanted_components(settings.envelope)


def test_an_unknown_tool_is_reported_at_its_path_with_a_suggestion(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES + "tools: [{use: fak}]\n", registry)
    assert "did you mean 'fake'" in problems["tools[0].use"]


def test_a_tools_own_options_are_strict(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES + "tools: [{use: fake, colour: red}]\n", registry)
    assert "tools[0].colour" in problems


def test_tool_call_settings_are_validated(registry) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(FAKES + "tool_calls: {max_rounds: 99, max_result_char: 10}\n",
                         registry)
    assert "tool_calls.max_rounds" in problems
    assert "did you mean 'max_result_chars'" in problems["tool_calls.max_result_char"]


def test_without_tools_nothing_is_offered(registry) -> None:  # type: ignore[no-untyped-def]
    settings = validate_config(load_yaml(FAKES), registry=registry, environ={})
    assert Runtime(settings).tools == []


def test_the_server_attaches_tools_and_a_text_turn_traces_their_calls(
        registry, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import time

    from omoide.server.app import create_app
    from omoide.testing.auth import admin_client
    from omoide.testing.doubles import MemoryServiceDouble

    text = (FAKES.replace("chat: {use: fake}", "chat: {use: fake, call_tools: [{name: echo}]}")
            + f"server: {{data_dir: '{tmp_path}'}}\ntools: [{{use: fake}}]\n")
    settings = validate_config(load_yaml(text), registry=registry, environ={})
    app = create_app(settings, registry, memory=MemoryServiceDouble())
    with admin_client(app) as client:
        deadline = time.monotonic() + 10
        while client.get("/healthz").json()["status"] != "ready":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert client.get("/healthz").json()["components"]["tools[0]"]["state"] == "ready"
        body = client.post("/v1/turns", json={"user": "alice", "text": "やって"}).json()
    [call] = body["trace"]["tools"]
    assert call["name"] == "echo" and call["source"] == "fake" and call["outcome"] == "ok"
    tool = app.state.omoide.runtime.tools[0]
    assert tool.host.data_dir == tmp_path / "tools" / "testing"
