"""Whose clock: a person's own time zone, else the assistant's."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from omoide.api import ToolConfig, ToolContext


class ZonedToolConfig(ToolConfig):
    user_timezones: dict[str, str] = Field(
        default_factory=dict,
        description="IANA time zone per user id, for people who live elsewhere than "
                    "`assistant.timezone` (e.g. {bob: Europe/Berlin}).")

    @field_validator("user_timezones")
    @classmethod
    def _known_zones(cls, zones: dict[str, str]) -> dict[str, str]:
        for user, zone in zones.items():
            try:
                ZoneInfo(zone)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"unknown time zone {zone!r} for user {user!r}") from exc
        return zones


def zone_for(context: ToolContext, config: ZonedToolConfig) -> ZoneInfo:
    """The person's time zone: their own from the config, else the assistant's."""
    return ZoneInfo(config.user_timezones.get(context.user, context.timezone))


WEEKDAYS_JA = ("月", "火", "水", "木", "金", "土", "日")
