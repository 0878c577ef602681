"""``{use: NAME, ...options}``: how the YAML picks a registered component for a stage."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class StageSpec(BaseModel):
    """``{use: NAME, ...options}``; the options are validated in phase 2, by the chosen
    component's own ``Config`` (see :mod:`omoide.config`)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    use: str = Field(description="Registered component name.")

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})
