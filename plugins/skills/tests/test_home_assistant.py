"""The Home Assistant skill against a real local server speaking HA's REST API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from omoide.components import ToolContext, ToolError
from omoide.config import EnvValue
from omoide.errors import ComponentError
from omoide.testing import ToolContract
from omoide.testing.contracts import now_utc
from omoide_skills.home_assistant import HomeAssistantTool

TOKEN = "llat-test-token"


@dataclass
class HomeState:
    states: dict[str, dict[str, Any]] = field(default_factory=lambda: {
        "light.living_room": {"state": "off", "attributes": {"friendly_name": "リビングの電気"}},
        "light.bedroom": {"state": "on", "attributes": {"friendly_name": "寝室の電気"}},
        "lock.front_door": {"state": "locked", "attributes": {"friendly_name": "玄関の鍵"}},
        "switch.fan": {"state": "off", "attributes": {"friendly_name": "扇風機"}},
    })
    service_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def home_assistant_app(home: HomeState) -> FastAPI:
    """The parts of HA's REST API the skill uses, with HA's auth and answers."""
    app = FastAPI()

    def authorised(request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {TOKEN}"

    def as_state(entity_id: str) -> dict[str, Any]:
        s = home.states[entity_id]
        return {"entity_id": entity_id, "state": s["state"], "attributes": s["attributes"],
                "last_changed": "2026-11-30T12:00:00+00:00",
                "last_updated": "2026-11-30T12:00:00+00:00", "context": {"id": "x"}}

    @app.get("/api/states")
    async def states(request: Request) -> Any:
        if not authorised(request):
            return JSONResponse({"message": "401: Unauthorized"}, 401)
        return [as_state(e) for e in home.states]

    @app.get("/api/states/{entity_id}")
    async def state(entity_id: str, request: Request) -> Any:
        if not authorised(request):
            return JSONResponse({"message": "401: Unauthorized"}, 401)
        if entity_id not in home.states:
            return JSONResponse({"message": "Entity not found."}, 404)
        return as_state(entity_id)

    @app.post("/api/services/{domain}/{service}")
    async def call(domain: str, service: str, request: Request) -> Any:
        if not authorised(request):
            return JSONResponse({"message": "401: Unauthorized"}, 401)
        body = await request.json()
        home.service_calls.append((domain, service, body))
        entity = body["entity_id"]
        if service in ("turn_on", "turn_off"):
            home.states[entity]["state"] = service.removeprefix("turn_")
        return [as_state(entity)]

    return app


@pytest.fixture
def home() -> HomeState:
    return HomeState()


@pytest.fixture
def ha_url(serve_app: Callable[[Any], str], home: HomeState) -> str:
    return serve_app(home_assistant_app(home))


def _context(confirmed: bool = False) -> ToolContext:
    return ToolContext("alice", now_utc(), "Asia/Tokyo", confirmed=confirmed)


class TestHomeAssistant(ToolContract):
    component_cls = HomeAssistantTool

    @pytest.fixture
    def config(self, ha_url: str) -> dict[str, Any]:
        return {"url": ha_url, "token": EnvValue(TOKEN, "HA_TOKEN"),
                "allow_domains": ["light"], "allow_entities": ["switch.fan"]}

    @pytest.fixture
    def sample_calls(self) -> dict[str, dict[str, Any]]:
        return {"ha_list_entities": {}, "ha_get_state": {"entity_id": "light.bedroom"}}

    async def test_only_allowed_entities_are_listed(self, component: HomeAssistantTool) -> None:
        listed = await component.invoke("ha_list_entities", {}, _context())
        ids = {e["entity_id"] for e in listed["entities"]}
        assert ids == {"light.living_room", "light.bedroom", "switch.fan"}
        lights = await component.invoke("ha_list_entities", {"domain": "light"}, _context())
        assert {e["name"] for e in lights["entities"]} == {"リビングの電気", "寝室の電気"}

    async def test_a_state_is_said_with_the_entitys_name(
            self, component: HomeAssistantTool) -> None:
        said = await component.invoke("ha_get_state", {"entity_id": "light.bedroom"},
                                      _context())
        assert said["state"] == "on" and said["message"] == "寝室の電気は今「on」だよ。"

    async def test_an_entity_outside_the_allow_list_is_refused_and_said_so(
            self, component: HomeAssistantTool, home: HomeState) -> None:
        with pytest.raises(ToolError, match="許可されていない"):
            await component.invoke("ha_get_state", {"entity_id": "lock.front_door"},
                                   _context())
        with pytest.raises(ToolError, match=r"lock\.front_door は操作を許可されていない"):
            await component.prepare("ha_call_service", {
                "domain": "lock", "service": "turn_off", "entity_id": "lock.front_door"},
                _context())
        with pytest.raises(ToolError, match="許可されていない"):
            await component.invoke("ha_call_service", {
                "domain": "lock", "service": "unlock", "entity_id": "lock.front_door"},
                _context(confirmed=True))
        assert home.service_calls == []

    async def test_a_service_outside_the_allowed_ones_is_refused(
            self, component: HomeAssistantTool, home: HomeState) -> None:
        with pytest.raises(ToolError, match="許可されていない操作"):
            await component.invoke("ha_call_service", {
                "domain": "light", "service": "delete", "entity_id": "light.bedroom"},
                _context(confirmed=True))
        assert home.service_calls == []

    async def test_switching_asks_first_with_the_entitys_name(
            self, component: HomeAssistantTool, home: HomeState) -> None:
        asked = await component.prepare("ha_call_service", {
            "domain": "light", "service": "turn_on", "entity_id": "light.living_room"},
            _context())
        assert asked.question == "リビングの電気をつけていい？"
        assert home.service_calls == []

    async def test_a_confirmed_switch_calls_the_service_and_says_the_new_state(
            self, component: HomeAssistantTool, home: HomeState) -> None:
        said = await component.invoke("ha_call_service", {
            "domain": "light", "service": "turn_on", "entity_id": "light.living_room"},
            _context(confirmed=True))
        assert home.service_calls == [("light", "turn_on", {"entity_id": "light.living_room"})]
        assert said["state"] == "on"

    async def test_an_unknown_entity_in_an_allowed_domain_is_said_so(
            self, component: HomeAssistantTool) -> None:
        with pytest.raises(ToolError, match="見つからなかった"):
            await component.invoke("ha_get_state", {"entity_id": "light.garage"}, _context())


async def test_a_refused_token_is_a_clear_error(ha_url: str) -> None:
    tool = HomeAssistantTool(HomeAssistantTool.Config(
        url=ha_url, token=EnvValue("wrong", "HA_TOKEN"), allow_domains=["light"]))
    await tool.start()
    try:
        with pytest.raises(ComponentError, match="token was refused"):
            await tool.invoke("ha_list_entities", {}, _context())
    finally:
        await tool.stop()


def test_the_token_must_come_from_the_environment() -> None:
    with pytest.raises(ValueError, match=r"\{\$env: NAME\}"):
        HomeAssistantTool.Config.model_validate({"url": "http://ha:8123", "token": "literal"})


def test_switching_without_confirmation_can_be_configured(ha_url: str) -> None:
    tool = HomeAssistantTool(HomeAssistantTool.Config(
        url=ha_url, token=EnvValue(TOKEN, "HA_TOKEN"), confirm_changes=False))
    assert not tool.function("ha_call_service").needs_confirmation
