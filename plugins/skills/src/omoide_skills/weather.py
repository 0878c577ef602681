"""The ``weather`` tool: a forecast from an Open-Meteo-compatible API (no key needed).

One request per call: ``GET {base_url}/v1/forecast`` with the person's coordinates
(from ``user_locations``, else the default ``latitude``/``longitude``), the current
temperature and weather code, and the daily code, high, low and chance of rain for
today and the next two days. WMO weather codes are said in Japanese.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from omoide.api import ComponentError, Tool, ToolContext, ToolError, ToolFunction
from omoide_skills.user_zones import ZonedToolConfig, zone_for


class Location(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    latitude: float = Field(ge=-90, le=90, description="Latitude in degrees.")
    longitude: float = Field(ge=-180, le=180, description="Longitude in degrees.")
    place: str = Field(description="How the place is said (e.g. 東京).")


class WeatherConfig(ZonedToolConfig):
    base_url: str = Field("https://api.open-meteo.com",
                          description="Base URL of an Open-Meteo-compatible forecast API.")
    latitude: float = Field(35.6812, ge=-90, le=90,
                            description="Default latitude (Tokyo Station).")
    longitude: float = Field(139.7671, ge=-180, le=180, description="Default longitude.")
    place: str = Field("東京", description="How the default place is said.")
    user_locations: dict[str, Location] = Field(
        default_factory=dict, description="Each person's own place, by user id.")
    timeout_s: float = Field(8.0, gt=0, le=60, description="Time budget of one forecast.")


WEATHER = ToolFunction(
    "weather",
    "天気予報を調べる（今日・明日・明後日）。「明日の天気は？」「傘いる？」に使う。",
    {"type": "object", "properties": {
        "day": {"type": "string", "enum": ["today", "tomorrow", "day_after_tomorrow"],
                "description": "いつの天気か"}}})

DAYS = {"today": 0, "tomorrow": 1, "day_after_tomorrow": 2}
DAY_WORDS = {0: "今日", 1: "明日", 2: "明後日"}

# WMO weather interpretation codes (as Open-Meteo documents them)
WMO_JA: dict[int, str] = {
    0: "快晴", 1: "晴れ", 2: "晴れ時々くもり", 3: "くもり", 45: "霧", 48: "霧",
    51: "弱い霧雨", 53: "霧雨", 55: "強い霧雨", 56: "着氷性の霧雨", 57: "着氷性の霧雨",
    61: "小雨", 63: "雨", 65: "大雨", 66: "着氷性の雨", 67: "着氷性の雨",
    71: "小雪", 73: "雪", 75: "大雪", 77: "霧雪", 80: "にわか雨", 81: "にわか雨",
    82: "激しいにわか雨", 85: "にわか雪", 86: "激しいにわか雪", 95: "雷雨",
    96: "ひょうを伴う雷雨", 99: "ひょうを伴う激しい雷雨",
}


def weather_words(code: Any) -> str:
    try:
        return WMO_JA.get(int(code), f"天気コード{code}")
    except (TypeError, ValueError):
        return "不明"


class WeatherTool(Tool):
    """Today's, tomorrow's or the day after's weather where the person is."""

    name = "weather"
    recognition_phrases = ("天気", "傘", "気温")
    Config: ClassVar[type[WeatherConfig]] = WeatherConfig
    config: WeatherConfig

    def __init__(self, config: WeatherConfig) -> None:
        super().__init__(config)
        self._client: Any = None

    async def _start(self) -> None:
        import httpx
        self._client = httpx.AsyncClient(base_url=self.config.base_url.rstrip("/"),
                                         timeout=self.config.timeout_s)

    async def _stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def functions(self) -> Sequence[ToolFunction]:
        return [WEATHER]

    def _location(self, user: str) -> Location:
        own = self.config.user_locations.get(user)
        return own or Location(latitude=self.config.latitude,
                               longitude=self.config.longitude, place=self.config.place)

    async def _invoke(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> Any:
        import httpx

        day_name = arguments.get("day") or "today"
        if day_name not in DAYS:
            raise ToolError(f"day must be one of {', '.join(DAYS)}")
        offset = DAYS[day_name]
        where = self._location(context.user)
        zone = zone_for(context, self.config).key
        params = {"latitude": where.latitude, "longitude": where.longitude, "timezone": zone,
                  "current": "temperature_2m,weather_code,wind_speed_10m",
                  "daily": "weather_code,temperature_2m_max,temperature_2m_min,"
                           "precipitation_probability_max",
                  "forecast_days": 3}
        try:
            response = await self._client.get("/v1/forecast", params=params)
        except httpx.HTTPError as exc:
            raise ComponentError(f"weather: cannot reach {self.config.base_url} ({exc})",
                                 retryable=True) from exc
        if response.status_code != 200:
            reason = _reason(response)
            raise ComponentError(f"weather: HTTP {response.status_code}: {reason}",
                                 retryable=response.status_code >= 500)
        try:
            return forecast_summary(response.json(), offset, where.place)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ComponentError(f"weather: unexpected answer from the API ({exc})") from exc


def _reason(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict) and body.get("reason"):
        return str(body["reason"])
    return str(body)[:200]


def forecast_summary(body: dict[str, Any], offset: int, place: str) -> dict[str, Any]:
    """What is said for day ``offset`` (0 = today) of an Open-Meteo forecast answer."""
    daily = body["daily"]
    day = str(daily["time"][offset])
    words = weather_words(daily["weather_code"][offset])
    high = daily["temperature_2m_max"][offset]
    low = daily["temperature_2m_min"][offset]
    rain = (daily.get("precipitation_probability_max") or [None] * 3)[offset]
    result: dict[str, Any] = {"place": place, "date": day, "weather": words,
                              "max_c": high, "min_c": low, "precipitation_probability": rain}
    message = (f"{DAY_WORDS[offset]}の{place}は{words}、"
               f"最高{round(float(high))}度、最低{round(float(low))}度")
    if rain is not None:
        message += f"、降水確率{round(float(rain))}%"
    if offset == 0 and isinstance(body.get("current"), dict):
        current = body["current"]
        result["now"] = {"temperature_c": current.get("temperature_2m"),
                         "weather": weather_words(current.get("weather_code"))}
        if current.get("temperature_2m") is not None:
            message += f"。今は{round(float(current['temperature_2m']))}度"
    result["message"] = message + "だよ。"
    return result
