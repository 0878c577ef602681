"""The weather skill against a real local server speaking Open-Meteo's forecast API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from omoide.components import ToolContext, ToolError
from omoide.errors import ComponentError
from omoide.testing import ToolContract
from omoide.testing.contracts import now_utc
from omoide_skills.weather import WeatherTool, weather_words


@dataclass
class OpenMeteoState:
    queries: list[dict[str, str]] = field(default_factory=list)
    answer: Any = "forecast"   # "forecast", "broken", or (status, body)


def forecast_body(timezone: str) -> dict[str, Any]:
    """What api.open-meteo.com/v1/forecast answers for current + daily variables."""
    return {
        "latitude": 35.7, "longitude": 139.75, "generationtime_ms": 0.1,
        "utc_offset_seconds": 32400, "timezone": timezone, "timezone_abbreviation": "JST",
        "elevation": 40.0,
        "current_units": {"time": "iso8601", "interval": "seconds", "temperature_2m": "°C",
                          "weather_code": "wmo code", "wind_speed_10m": "km/h"},
        "current": {"time": "2026-11-30T21:00", "interval": 900, "temperature_2m": 9.4,
                    "weather_code": 1, "wind_speed_10m": 7.2},
        "daily_units": {"time": "iso8601", "weather_code": "wmo code",
                        "temperature_2m_max": "°C", "temperature_2m_min": "°C",
                        "precipitation_probability_max": "%"},
        "daily": {"time": ["2026-11-30", "2026-12-01", "2026-12-02"],
                  "weather_code": [1, 61, 3], "temperature_2m_max": [14.2, 11.6, 12.9],
                  "temperature_2m_min": [5.1, 7.4, 4.0],
                  "precipitation_probability_max": [5, 80, 20]},
    }


def open_meteo_app(state: OpenMeteoState) -> FastAPI:
    app = FastAPI()

    @app.get("/v1/forecast")
    async def forecast(request: Request) -> Any:
        query = dict(request.query_params)
        state.queries.append(query)
        if isinstance(state.answer, tuple):
            return JSONResponse(state.answer[1], status_code=state.answer[0])
        if state.answer == "broken":
            return PlainTextResponse("<html>gateway</html>")
        if "latitude" not in query or "daily" not in query:
            return JSONResponse({"error": True, "reason": "Parameter missing"}, 400)
        return forecast_body(query.get("timezone", "GMT"))

    return app


@pytest.fixture
def state() -> OpenMeteoState:
    return OpenMeteoState()


@pytest.fixture
def api(serve_app: Callable[[Any], str], state: OpenMeteoState) -> str:
    return serve_app(open_meteo_app(state))


def _context(user: str = "alice") -> ToolContext:
    return ToolContext(user, now_utc(), "Asia/Tokyo")


class TestWeather(ToolContract):
    component_cls = WeatherTool

    @pytest.fixture
    def config(self, api: str) -> dict[str, Any]:
        return {"base_url": api, "user_locations": {
            "bob": {"latitude": 35.23, "longitude": 139.02, "place": "箱根"}},
            "user_timezones": {"bob": "Asia/Tokyo"}}

    @pytest.fixture
    def sample_calls(self) -> dict[str, dict[str, Any]]:
        return {"weather": {"day": "today"}}

    async def test_tomorrows_weather_is_said_in_japanese(self, component: WeatherTool) -> None:
        said = await component.invoke("weather", {"day": "tomorrow"}, _context())
        assert said["message"] == "明日の東京は小雨、最高12度、最低7度、降水確率80%だよ。"
        assert said["date"] == "2026-12-01"

    async def test_today_includes_the_temperature_now(self, component: WeatherTool) -> None:
        said = await component.invoke("weather", {}, _context())
        assert said["message"].endswith("今は9度だよ。") and said["now"]["weather"] == "晴れ"

    async def test_the_request_carries_the_persons_place_and_zone(
            self, component: WeatherTool, state: OpenMeteoState) -> None:
        said = await component.invoke("weather", {"day": "today"}, _context("bob"))
        query = state.queries[-1]
        assert (query["latitude"], query["longitude"]) == ("35.23", "139.02")
        assert query["timezone"] == "Asia/Tokyo" and query["forecast_days"] == "3"
        assert "temperature_2m_max" in query["daily"]
        assert said["place"] == "箱根"

    async def test_an_unknown_day_is_refused(self, component: WeatherTool) -> None:
        with pytest.raises(ToolError, match="day must be"):
            await component.invoke("weather", {"day": "next_year"}, _context())

    async def test_an_api_error_is_a_component_error_with_its_reason(
            self, component: WeatherTool, state: OpenMeteoState) -> None:
        state.answer = (400, {"error": True, "reason": "Latitude must be in range"})
        with pytest.raises(ComponentError, match="Latitude must be in range") as info:
            await component.invoke("weather", {}, _context())
        assert not info.value.retryable
        state.answer = (503, {"error": True, "reason": "busy"})
        with pytest.raises(ComponentError) as info:
            await component.invoke("weather", {}, _context())
        assert info.value.retryable

    async def test_a_malformed_answer_is_an_error_not_a_crash(
            self, component: WeatherTool, state: OpenMeteoState) -> None:
        state.answer = "broken"
        with pytest.raises(ComponentError, match="unexpected answer"):
            await component.invoke("weather", {}, _context())


async def test_an_unreachable_api_is_a_retryable_error(free_port: int) -> None:
    tool = WeatherTool(WeatherTool.Config(base_url=f"http://127.0.0.1:{free_port}"))
    await tool.start()
    try:
        with pytest.raises(ComponentError, match="cannot reach") as info:
            await tool.invoke("weather", {}, _context())
    finally:
        await tool.stop()
    assert info.value.retryable


def test_wmo_codes_are_said_in_japanese() -> None:
    assert [weather_words(c) for c in (0, 3, 63, 75, 95)] == ["快晴", "くもり", "雨", "大雪",
                                                             "雷雨"]
    assert weather_words(None) == "不明"
