"""omoide's OpenAI-compatible endpoint (``POST /v1/chat/completions``, ``GET /v1/models``)
through the real app: the official ``openai`` SDK (sync and streaming), a request in the
shape Home Assistant's OpenAI-compatible conversation integrations send, memory told,
extracted and recalled per person, and every refusal in OpenAI's error shape.

Real parts: the app under uvicorn (:class:`omoide.testing.http.LocalServer`, lifespan
on), the guard, the turn pipeline, the memory engine with its journal and the chat
extractor, and the ``modelscope`` chat plugin talking HTTP to a local OpenAI-compatible
chat server (below) that answers by rules and records what it was sent. Test doubles:
ASR, TTS, embedder and store (``use: fake``).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("openai")
pytest.importorskip("omoide_chat_modelscope")

import openai
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from omoide.server.loopback import settings_from_data
from omoide.testing.auth import admin_token, token_store
from omoide.testing.http import LocalServer

FIXTURES = Path(__file__).parent / "openai_fixtures"
SOBA_FACT = "あなたはそばアレルギーだ。"


# -- the chat model: a real OpenAI-compatible server answering by rules -------------------
@dataclass
class ChatDouble:
    """What the chat server was sent (turns and extractions apart)."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    extractions: list[dict[str, Any]] = field(default_factory=list)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "up",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


async def _text(text: str) -> AsyncIterator[str]:
    yield _chunk({"role": "assistant", "content": ""})
    for i in range(0, len(text), 4):          # a few characters a chunk, as models stream
        yield _chunk({"content": text[i:i + 4]})
    yield _chunk({}, "stop")
    yield "data: [DONE]\n\n"


async def _tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> AsyncIterator[str]:
    yield _chunk({"role": "assistant", "tool_calls": [
        {"index": 0, "id": call_id, "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}]})
    yield _chunk({}, "tool_calls")
    yield "data: [DONE]\n\n"


def _extraction_answer(body: dict[str, Any]) -> str:
    said = body["messages"][-1]["content"]
    facts = [{"text": SOBA_FACT, "kind": "health", "profile": True, "category": "health",
              "replaces": None, "entities": ["そば"]}] if "そばアレルギー" in said else []
    return json.dumps({"facts": facts}, ensure_ascii=False)


def _turn_answer(body: dict[str, Any]) -> AsyncIterator[str]:
    messages = body["messages"]
    system, last = messages[0]["content"], messages[-1]
    offered = {t["function"]["name"] for t in body.get("tools", [])}
    if last["role"] == "tool":
        return _text("[happy] リビングの電気をつけました。")
    if "HassTurnOn" in offered and "つけて" in last["content"]:
        return _tool_call("call_ha_1", "HassTurnOn", {"name": "リビングの電気",
                                                      "domain": ["light"]})
    if "そばアレルギー" in system:
        return _text("[thinking] そばアレルギーだったよね。今夜はそば以外にしよう。")
    return _text(f"[happy] {body['model']}です。いいね、聞かせて。")


def chat_app(double: ChatDouble) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        body = await request.json()
        if body.get("response_format") == {"type": "json_object"}:
            double.extractions.append(body)
            events = _text(_extraction_answer(body))
        else:
            double.turns.append(body)
            events = _turn_answer(body)
        return StreamingResponse(events, media_type="text/event-stream")

    return app


# -- omoide, served ---------------------------------------------------------------------
@dataclass
class Served:
    url: str
    double: ChatDouble
    data_dir: Path

    def token(self, user: str) -> str:
        token, _ = token_store(self.data_dir).create_person_token(user, label="test")
        return token

    @property
    def admin(self) -> str:
        return admin_token(self.data_dir)

    def client(self, token: str) -> Any:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=token, max_retries=0)

    def post(self, body: Any, token: str | None = None, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if not isinstance(body, bytes | str):
            return httpx.post(f"{self.url}/v1/chat/completions", json=body, headers=headers,
                              timeout=30, **kw)
        return httpx.post(f"{self.url}/v1/chat/completions", content=body, timeout=30,
                          headers={**headers, "Content-Type": "application/json",
                                   **kw.pop("headers", {})}, **kw)

    def get(self, path: str, **params: Any) -> Any:
        r = httpx.get(f"{self.url}{path}", params=params, timeout=30,
                      headers={"Authorization": f"Bearer {self.admin}"})
        assert r.status_code == 200, r.text
        return r.json()

    def journaled(self, user: str) -> list[tuple[str, str]]:
        """What the journal holds of ``user``: the exchanges waiting for extraction
        (counted) as the turn feed shows them (what was said, what was answered)."""
        waiting = sum(p["exchanges"] for p in self.get("/v1/memory/pending", user=user)
                      ["pending"] if p["user"] == user)
        turns = self.get(f"/v1/users/{user}/turns")["turns"]
        said = sorted((t["at"], t["transcript"], t["reply"]) for t in turns)
        assert waiting == len(said), (waiting, said)
        return [(transcript, reply) for _, transcript, reply in said]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    double = ChatDouble()
    data_dir = tmp_path_factory.mktemp("openai") / "data"
    with LocalServer(chat_app(double)) as chat_url:
        upstream = {"use": "modelscope", "base_url": f"{chat_url}/v1", "retries": 0}
        settings = settings_from_data({
            "server": {"data_dir": str(data_dir), "limits": {"max_chat_bytes": 16384}},
            "asr": {"use": "fake"}, "embed": {"use": "fake"}, "store": {"use": "fake"},
            "chat": {**upstream, "model": "main-model"},
            "chat_models": {"fast": {**upstream, "model": "fast-model"}},
            "tts": {"use": "fake"}})
        from omoide.config import wanted_components
        from omoide.plugins import build_registry
        from omoide.server.app import create_app
        app = create_app(settings, build_registry(wanted_components(settings.envelope)))
        with LocalServer(app, lifespan="on") as url:
            deadline = time.monotonic() + 60
            while httpx.get(f"{url}/healthz").json()["status"] != "ready":
                assert time.monotonic() < deadline, "omoide did not start"
                time.sleep(0.05)
            yield Served(url, double, data_dir)


def ask(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "omoide", "messages": [{"role": "user", "content": text}], **extra}


# -- the SDK ----------------------------------------------------------------------------
def test_the_openai_sdk_gets_a_plain_completion_with_the_memory_used_beside_it(
        served: Served) -> None:
    completion = served.client(served.token("sdk_sync")).chat.completions.create(
        model="omoide", messages=[{"role": "user", "content": "週末に何しようかな"}])
    choice = completion.choices[0]
    assert choice.message.role == "assistant" and choice.finish_reason == "stop"
    assert choice.message.content == "main-modelです。いいね、聞かせて。"   # the face tag off
    system = served.double.turns[-1]["messages"][0]["content"]
    assert "スタックチャン" in system        # no client system prompt: omoide's persona
    assert "感情タグ" not in system          # but no faces for a text client
    assert completion.object == "chat.completion" and completion.model == "omoide"
    extension = completion.model_extra["omoide"]
    assert extension["user"] == "sdk_sync"
    assert extension["memories"] == [] and extension["profile"] == []


def test_the_openai_sdk_streams_the_reply_piece_by_piece_and_ends_it(served: Served) -> None:
    stream = served.client(served.token("sdk_stream")).chat.completions.create(
        model="omoide", messages=[{"role": "user", "content": "週末に何しようかな"}],
        stream=True)
    chunks = list(stream)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert "".join(pieces) == "main-modelです。いいね、聞かせて。"
    assert len(pieces) > 3                      # streamed as it came, not one sentence
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len({c.id for c in chunks}) == 1
    assert chunks[-1].model_extra["omoide"]["user"] == "sdk_stream"


def test_models_lists_the_configured_chat_models_and_model_picks_one(served: Served) -> None:
    client = served.client(served.token("picker"))
    assert [m.id for m in client.models.list()] == ["omoide", "fast"]
    completion = client.chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "週末に何しようかな"}])
    assert completion.model == "fast"
    assert served.double.turns[-1]["model"] == "fast-model"
    assert completion.choices[0].message.content.startswith("fast-modelです。")


def test_one_model_is_retrieved_by_its_name_and_an_unknown_one_is_not_found(
        served: Served) -> None:
    client = served.client(served.token("retriever"))
    fast = client.models.retrieve("fast")
    assert (fast.id, fast.object, fast.owned_by) == ("fast", "model", "omoide")
    with pytest.raises(openai.NotFoundError) as missing:
        client.models.retrieve("gpt-4o")
    assert missing.value.code == "model_not_found"
    assert "GET /v1/models" in missing.value.message


def test_an_unknown_model_is_answered_by_the_default_with_a_warning_header(
        served: Served) -> None:
    raw = served.client(served.token("picker2")).chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "週末に何しようかな"}])
    assert "unknown model 'gpt-4o'" in raw.headers["x-omoide-warning"]
    completion = raw.parse()
    assert completion.model == "omoide"
    assert served.double.turns[-1]["model"] == "main-model"


# -- Home Assistant ---------------------------------------------------------------------
def _sse(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line.removeprefix("data: ") for line in response.text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


def test_home_assistant_gets_its_tool_call_back_and_its_result_answered_and_journaled(
        served: Served) -> None:
    request = json.loads((FIXTURES / "home_assistant_request.json").read_text("utf-8"))
    request.pop("_comment")
    token = served.token("hanako")
    first = _sse(served.post(request, token))
    upstream = served.double.turns[-1]
    system = upstream["messages"][0]["content"]
    assert system.startswith(request["messages"][0]["content"])   # the client's prompt kept
    assert "スタックチャン" not in system                       # instead of omoide's persona
    assert {t["function"]["name"] for t in upstream["tools"]} >= {"HassTurnOn", "HassTurnOff",
                                                                  "GetLiveContext"}
    [call] = [tc for c in first for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert call["id"] == "call_ha_1" and call["function"]["name"] == "HassTurnOn"
    assert json.loads(call["function"]["arguments"]) == {"name": "リビングの電気",
                                                         "domain": ["light"]}
    assert first[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert served.journaled("hanako") == []      # not journaled until the reply is final
    request["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_ha_1", "type": "function", "function": call["function"]}]},
        {"role": "tool", "tool_call_id": "call_ha_1", "content": json.dumps(
            {"speech": {}, "response_type": "action_done", "data": {
                "success": [{"name": "リビングの電気", "type": "entity",
                             "id": "light.living"}], "failed": []}})}]
    second = _sse(served.post(request, token))
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in second) == \
        "リビングの電気をつけました。"
    assert second[-1]["choices"][0]["finish_reason"] == "stop"
    assert served.journaled("hanako") == [
        ("リビングの電気をつけて", "リビングの電気をつけました。")]


# -- memory, per person -----------------------------------------------------------------
def test_a_fact_told_through_the_endpoint_is_recalled_later_for_that_person_only(
        served: Served) -> None:
    alice, bob = served.client(served.token("alice")), served.client(served.token("bob"))
    told = alice.chat.completions.create(model="omoide", messages=[
        {"role": "system", "content": "あなたは家族のアシスタントです。"},
        {"role": "user", "content": "おはよう"},
        {"role": "assistant", "content": "おはよう！"},
        {"role": "user", "content": "私はそばアレルギーなんだ"}])
    assert told.choices[0].finish_reason == "stop"
    # the client's earlier messages are its history: only the new exchange is journaled
    assert [said for said, _ in served.journaled("alice")] == ["私はそばアレルギーなんだ"]
    r = httpx.post(f"{served.url}/v1/memory/extract", json={"user": "alice"},
                   headers={"Authorization": f"Bearer {served.admin}"}, timeout=60)
    assert r.status_code == 200, r.text
    assert served.double.extractions, "extraction asked the chat model"

    later = alice.chat.completions.create(
        model="omoide", messages=[{"role": "user", "content": "今夜は何を食べようかな"}])
    assert "そばアレルギー" in served.double.turns[-1]["messages"][0]["content"]
    assert later.choices[0].message.content.startswith("そばアレルギーだったよね")
    assert [f["text"] for f in later.model_extra["omoide"]["profile"]] == [SOBA_FACT]

    other = bob.chat.completions.create(
        model="omoide", messages=[{"role": "user", "content": "今夜は何を食べようかな"}])
    assert "そば" not in served.double.turns[-1]["messages"][0]["content"]
    assert other.model_extra["omoide"]["profile"] == []
    assert "そば" not in other.choices[0].message.content


def test_the_admin_token_speaks_for_the_person_named_in_user(served: Served) -> None:
    served.client(served.token("carol")).chat.completions.create(**ask("こんにちは"))
    completion = served.client(served.admin).chat.completions.create(
        **ask("こんにちは"), user="carol")
    assert completion.model_extra["omoide"]["user"] == "carol"


# -- refusals, in OpenAI's error shape --------------------------------------------------
def _refused(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"} and error["code"] == code, error
    return str(error["message"])


def test_a_request_without_a_key_is_refused(served: Served) -> None:
    _refused(served.post(ask("こんにちは")), 401, "invalid_api_key")


def test_a_wrong_key_is_refused_as_the_sdk_expects(served: Served) -> None:
    with pytest.raises(openai.AuthenticationError):
        served.client("not-a-token").chat.completions.create(**ask("こんにちは"))


def test_the_admin_token_without_a_person_is_refused(served: Served) -> None:
    _refused(served.post(ask("こんにちは"), served.admin), 400, "user_required")


def test_the_admin_token_naming_an_unknown_person_is_refused(served: Served) -> None:
    message = _refused(served.post(ask("こんにちは", user="nobody_here"), served.admin),
                       404, "unknown_user")
    assert "nobody_here" in message


def test_a_message_list_over_the_body_limit_is_refused_before_it_is_read(
        served: Served) -> None:
    history = [{"role": "user", "content": "あ" * 1000}] * 8          # ~24 KB over 16 KiB
    body = {"model": "omoide", "messages": [*history, {"role": "user", "content": "で？"}]}
    message = _refused(served.post(body, served.token("dave")), 413, "request_too_large")
    assert "server.limits.max_chat_bytes" in message


def test_a_streamed_message_list_over_the_body_limit_is_refused_while_it_arrives(
        served: Served) -> None:
    def body() -> Iterator[bytes]:   # no Content-Length: chunked, counted as it comes
        yield b'{"model": "omoide", "messages": ['
        for _ in range(20):
            yield json.dumps({"role": "user", "content": "あ" * 1000}).encode() + b","
        yield '{"role": "user", "content": "で？"}]}'.encode()

    r = httpx.post(f"{served.url}/v1/chat/completions", content=body(), timeout=30,
                   headers={"Authorization": f"Bearer {served.token('dave')}",
                            "Content-Type": "application/json"})
    _refused(r, 413, "request_too_large")


def test_an_image_part_is_refused_as_not_supported(served: Served) -> None:
    body = ask("")
    body["messages"][0]["content"] = [
        {"type": "text", "text": "これは何？"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    message = _refused(served.post(body, served.token("erin")), 400, "unsupported_content")
    assert "not supported" in message


def test_malformed_json_is_refused(served: Served) -> None:
    message = _refused(served.post(b'{"model": "omoide", "messages": [', served.token("erin")),
                       400, "invalid_json")
    assert "not valid JSON" in message


def test_a_tool_result_for_no_call_is_refused(served: Served) -> None:
    body = ask("電気つけて")
    body["messages"] += [{"role": "tool", "tool_call_id": "call_never", "content": "{}"}]
    message = _refused(served.post(body, served.token("erin")), 400,
                       "tool_result_without_call")
    assert "call_never" in message


def test_a_form_body_is_refused_in_the_same_shape(served: Served) -> None:
    r = served.post("model=omoide", served.token("erin"),
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    _refused(r, 415, "unsupported_media_type")


def test_a_refused_request_reaches_neither_the_chat_model_nor_the_journal(
        served: Served) -> None:
    before = len(served.double.turns)
    served.post(ask("こんにちは", user="frank"), served.admin)   # frank is unknown: 404
    assert len(served.double.turns) == before
    assert served.journaled("frank") == []
