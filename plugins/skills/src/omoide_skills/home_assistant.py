"""The ``home_assistant`` tool: look at and switch allowed things through HA's REST API.

Calls ``GET /api/states``, ``GET /api/states/<entity_id>`` and
``POST /api/services/<domain>/<service>`` with a long-lived access token
(``token: {$env: HA_TOKEN}``). Only entities named in ``allow_entities`` or belonging to
a domain in ``allow_domains`` are listed, read or switched, and only with the services in
``allow_services``; anything else is refused with a sentence saying so. Switching asks
the person first unless ``confirm_changes`` is off.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field, field_validator

from omoide.api import (
    ComponentError,
    ConfirmationRequest,
    Secret,
    Tool,
    ToolConfig,
    ToolContext,
    ToolError,
    ToolFunction,
)

_ENTITY = re.compile(r"^[a-z_][a-z0-9_]*\.[a-z0-9_]+$")


class HomeAssistantConfig(ToolConfig):
    url: str = Field(description="Base URL of Home Assistant (http://homeassistant.local:8123).")
    token: Secret = Field(description="Long-lived access token, as {$env: NAME}.")
    allow_entities: list[str] = Field(
        default_factory=list, description="Entities the assistant may see and switch "
                                          "(light.living_room, ...).")
    allow_domains: list[str] = Field(
        default_factory=list, description="Whole domains it may see and switch (light, "
                                          "switch, ...); nothing is allowed by default.")
    allow_services: list[str] = Field(
        default_factory=lambda: ["turn_on", "turn_off", "toggle"],
        description="Services it may call on allowed entities.")
    confirm_changes: bool = Field(
        True, description="Ask the person before calling a service (「リビングの電気を"
                          "つけていい？」).")
    max_entities: int = Field(50, ge=1, le=1000, description="Entities listed at most.")

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return v.rstrip("/")

    @field_validator("allow_entities")
    @classmethod
    def _entity_ids(cls, v: list[str]) -> list[str]:
        bad = [e for e in v if not _ENTITY.match(e)]
        if bad:
            raise ValueError(f"not entity ids (domain.object_id): {', '.join(bad)}")
        return v


LIST = ToolFunction(
    "ha_list_entities",
    "家の機器（Home Assistantのエンティティ）で操作してよいものを一覧する。"
    "domainで絞れる（light など）。",
    {"type": "object", "properties": {"domain": {"type": "string"}}})
GET = ToolFunction(
    "ha_get_state", "家の機器の今の状態を調べる（例: light.living_room がついているか）。",
    {"type": "object", "properties": {"entity_id": {"type": "string"}},
     "required": ["entity_id"]})


def _call_fn(confirm: bool) -> ToolFunction:
    return ToolFunction(
        "ha_call_service",
        "家の機器を操作する（例: domain=light, service=turn_on, entity_id=light.living_room）。",
        {"type": "object", "properties": {
            "domain": {"type": "string"}, "service": {"type": "string"},
            "entity_id": {"type": "string"}},
         "required": ["domain", "service", "entity_id"]},
        needs_confirmation=confirm)


def _name(state: dict[str, Any]) -> str:
    attributes = state.get("attributes")
    if isinstance(attributes, dict) and attributes.get("friendly_name"):
        return str(attributes["friendly_name"])
    return str(state.get("entity_id", "?"))


class HomeAssistantTool(Tool):
    """States and services of allowed Home Assistant entities."""

    name = "home_assistant"
    recognition_phrases = ("電気", "つけて", "消して")
    Config: ClassVar[type[HomeAssistantConfig]] = HomeAssistantConfig
    config: HomeAssistantConfig

    def __init__(self, config: HomeAssistantConfig) -> None:
        super().__init__(config)
        self._client: Any = None
        self._functions = [LIST, GET, _call_fn(config.confirm_changes)]

    async def _start(self) -> None:
        import httpx
        token = self.config.token.get_secret_value() if self.config.token else ""
        self._client = httpx.AsyncClient(
            base_url=self.config.url, timeout=self.config.timeout_s,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})

    async def _stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def functions(self) -> Sequence[ToolFunction]:
        return self._functions

    def allowed(self, entity_id: str) -> bool:
        return entity_id in self.config.allow_entities or (
            entity_id.partition(".")[0] in self.config.allow_domains)

    def _check(self, entity_id: Any) -> str:
        if not isinstance(entity_id, str) or not _ENTITY.match(entity_id):
            raise ToolError(f"{entity_id!r} is not an entity id (domain.object_id)")
        if not self.allowed(entity_id):
            raise ToolError(f"{entity_id} は操作を許可されていないから、さわれないよ。"
                            "（設定の allow_entities / allow_domains にないもの）")
        return entity_id

    async def _request(self, method: str, path: str, json: Any = None) -> Any:
        import httpx
        try:
            response = await self._client.request(method, path, json=json)
        except httpx.HTTPError as exc:
            raise ComponentError(f"home assistant: cannot reach {self.config.url} ({exc})",
                                 retryable=True) from exc
        if response.status_code == 401:
            raise ComponentError("home assistant: the token was refused (HTTP 401)")
        if response.status_code == 404:
            raise ToolError(f"Home Assistant に {path.rsplit('/', 1)[-1]} は見つからなかったよ。")
        if response.status_code >= 400:
            raise ComponentError(f"home assistant: HTTP {response.status_code}: "
                                 f"{response.text[:200]}",
                                 retryable=response.status_code >= 500)
        try:
            return response.json()
        except ValueError as exc:
            raise ComponentError("home assistant: the answer is not JSON") from exc

    async def _prepare(self, function: ToolFunction, arguments: dict[str, Any],
                       context: ToolContext) -> ConfirmationRequest:
        domain, service, entity = self._service_call(arguments)
        state = await self._request("GET", f"/api/states/{entity}")
        what = _name(state) if isinstance(state, dict) else entity
        verb = {"turn_on": "つけて", "turn_off": "消して", "toggle": "切り替えて"}.get(
            service, f"{service}して")
        return ConfirmationRequest(f"{what}を{verb}いい？",
                                   {"domain": domain, "service": service, "entity_id": entity})

    def _service_call(self, arguments: dict[str, Any]) -> tuple[str, str, str]:
        entity = self._check(arguments.get("entity_id"))
        domain = str(arguments.get("domain") or entity.partition(".")[0])
        service = str(arguments.get("service") or "")
        if service not in self.config.allow_services:
            raise ToolError(f"{service or '(なし)'} は許可されていない操作だよ。"
                            f"できるのは {', '.join(self.config.allow_services)} だけ。")
        if not re.match(r"^[a-z_]+$", domain):
            raise ToolError(f"{domain!r} is not a domain")
        return domain, service, entity

    async def _invoke(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> Any:
        if function == "ha_list_entities":
            domain = arguments.get("domain")
            states = await self._request("GET", "/api/states")
            if not isinstance(states, list):
                raise ComponentError("home assistant: /api/states did not return a list")
            entities = [{"entity_id": s["entity_id"], "name": _name(s), "state": s.get("state")}
                        for s in states if isinstance(s, dict)
                        and isinstance(s.get("entity_id"), str) and self.allowed(s["entity_id"])
                        and (not domain or s["entity_id"].startswith(f"{domain}."))]
            entities = entities[:self.config.max_entities]
            names = "、".join(f"{e['name']}（{e['state']}）" for e in entities[:8])
            return {"entities": entities,
                    "message": f"操作できるのは{names}だよ。" if entities
                    else "操作してよい機器はないよ。"}
        if function == "ha_get_state":
            entity = self._check(arguments.get("entity_id"))
            state = await self._request("GET", f"/api/states/{entity}")
            if not isinstance(state, dict):
                raise ComponentError("home assistant: the state is not an object")
            return {"entity_id": entity, "name": _name(state), "state": state.get("state"),
                    "message": f"{_name(state)}は今「{state.get('state')}」だよ。"}
        domain, service, entity = self._service_call(arguments)
        await self._request("POST", f"/api/services/{domain}/{service}",
                            json={"entity_id": entity})
        state = await self._request("GET", f"/api/states/{entity}")
        now = state.get("state") if isinstance(state, dict) else None
        name = _name(state) if isinstance(state, dict) else entity
        return {"entity_id": entity, "service": f"{domain}.{service}", "state": now,
                "message": f"{name}を操作したよ（今は「{now}」）。"}
