"""omoide plugin `skills`: tools the chat model may call.

Each is enabled by listing it under ``tools:`` in the config:

- ``clock``: the current date and time in the person's time zone;
- ``timers``: timers and alarms that survive restarts and speak when they go off;
- ``memory``: remember now, forget (after a yes), say what omoide knows about you;
- ``weather``: a forecast from an Open-Meteo-compatible API (no key);
- ``home_assistant``: states and services of allowed Home Assistant entities;
- ``mcp``: the tools of an MCP server (stdio or streamable HTTP).

Importing this module imports nothing heavy; each tool's module loads on registration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_tools(register: Callable[[Any], None]) -> None:
    from omoide_skills.clock import ClockTool
    from omoide_skills.home_assistant import HomeAssistantTool
    from omoide_skills.mcp_servers import McpServerTool
    from omoide_skills.memory_voice import MemoryTool
    from omoide_skills.timers import TimersTool
    from omoide_skills.weather import WeatherTool

    for cls in (ClockTool, TimersTool, MemoryTool, WeatherTool, HomeAssistantTool,
                McpServerTool):
        register(cls)
