"""The ``moments:`` section: when and how often omoide speaks first."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from omoide.moments.quiet_hours import QuietHours


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_span(v: str | None) -> str | None:
    if v is not None:
        QuietHours.parse(v)
    return v


class MomentsPerson(_Strict):
    off: bool = Field(False, description="Never speak first to this person (their off "
                      "switch; the console and 「そういうのは言わなくていいよ」 set it too).")
    quiet_hours: str | None = Field(None, description="This person's quiet hours "
                                    "(HH:MM-HH:MM), instead of the household's; what they "
                                    "set themselves (the console, `omoide moments quiet`) "
                                    "wins over it.")
    max_per_day: int | None = Field(None, ge=0, le=20,
                                    description="This person's daily limit, instead of "
                                    "the default.")

    @field_validator("quiet_hours")
    @classmethod
    def _span(cls, v: str | None) -> str | None:
        return _check_span(v)


class MomentsSettings(_Strict):
    enabled: bool = Field(True, description="Plan moments from memory and speak them: "
                          "the day before and the morning of a plan, a follow-up after "
                          "it, a birthday the day before, a reminder asked for.")
    quiet_hours: str = Field("22:00-07:00", description="Local time span (HH:MM-HH:MM, "
                             "may cross midnight) when omoide never speaks first: the "
                             "household's, for everyone who has no quiet hours of their "
                             "own. A robot people share waits for the quiet hours of "
                             "everyone near it.")
    max_per_day: int = Field(3, ge=0, le=20, description="At most this many moments a "
                             "day per person.")
    check_seconds: float = Field(60.0, gt=0, le=3600, description="How often the "
                                 "server looks for moments due to robots that are online.")
    conversation_gap_minutes: float = Field(
        10.0, gt=0, le=1440, description="A turn after this much silence starts a new "
        "conversation (its first reply may open with a moment).")
    text_turns: bool = Field(False, description="Also open typed turns (POST /v1/turns, "
                             "the console) with a moment; a robot's turns always may, a chat "
                             "client's (the OpenAI-compatible endpoint) never.")
    guest_minutes: float = Field(10.0, ge=0, le=1440, description="After someone else "
                                 "(a guest, or another member of the household) spoke to "
                                 "a person's robot, nothing of theirs is pushed to it for "
                                 "this long.")
    people: dict[str, MomentsPerson] = Field(default_factory=dict,
                                             description="Per-person settings, by person id.")

    @field_validator("quiet_hours")
    @classmethod
    def _span(cls, v: str) -> str:
        _check_span(v)
        return v

    def for_person(self, person: str) -> tuple[QuietHours, int, bool]:
        """(quiet hours, daily limit, off) for ``person`` as the config says (their own
        quiet hours, set from the console or the CLI, are the ledger's:
        :meth:`omoide.moments.delivery.MomentScheduler.quiet_hours`)."""
        own = self.people.get(person, MomentsPerson())
        quiet = QuietHours.parse(own.quiet_hours or self.quiet_hours)
        limit = own.max_per_day if own.max_per_day is not None else self.max_per_day
        return quiet, limit, own.off
