"""HTTP routes for voiceprints (the same operations as ``omoide voices``).

    GET    /v1/users/{user}/voices          who is enrolled with which encoder (no vectors)
    GET    /v1/users/{user}/voices/export   the voiceprints with their vectors (JSON)
    POST   /v1/users/{user}/voices          {"wavs": [base64 WAV, ...], "replace"?: bool}
                                            enrols from a few sentences (the speaker stage)
    DELETE /v1/users/{user}/voices          erases them

A voiceprint belongs to its person: a person's token reaches only their own, and
enrolling someone else's voice needs the admin token (:func:`require_user`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from omoide.audio import read_wav
from omoide.errors import InvalidInput
from omoide.server.auth import require_user
from omoide.server.inputs import UserId
from omoide.voices import SpeakerIdentifier, VoiceprintStore

MAX_WAVS = 10


class EnrolRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    wavs: list[str] = Field(..., min_length=1, max_length=MAX_WAVS,
                            description="WAV files (base64), one sentence or a few each.")
    replace: bool = Field(False, description="Replace what was enrolled instead of adding.")


def voice_router(store: VoiceprintStore,
                 identifier: Callable[[], SpeakerIdentifier | None]) -> APIRouter:
    """The routes over ``store``; ``identifier`` gives the speaker stage once the server
    is ready (None: no speaker stage, or not ready, so enrolment answers 503)."""
    router = APIRouter()

    @router.get("/v1/users/{user}/voices")
    async def listed(request: Request, user: UserId) -> dict[str, Any]:
        require_user(request, user)
        return {"user": user, "speaker_stage": identifier() is not None,
                "voiceprints": [p.to_json(vectors=False) for p in store.voiceprints(user)]}

    @router.get("/v1/users/{user}/voices/export")
    async def exported(request: Request, user: UserId) -> dict[str, Any]:
        require_user(request, user)
        return store.export(user)

    @router.post("/v1/users/{user}/voices")
    async def enrol(request: Request, user: UserId, body: EnrolRequest) -> dict[str, Any]:
        require_user(request, user)
        speaker = identifier()
        if speaker is None:
            raise HTTPException(503, "no speaker stage is ready (speaker: {use: ...})")
        try:
            clips = [read_wav(base64.b64decode(w, validate=True)) for w in body.wavs]
        except (binascii.Error, InvalidInput) as exc:
            raise HTTPException(422, f"not a WAV file: {exc}") from None
        enrolment = await speaker.enrol(user, clips, source="api", replace=body.replace)
        if enrolment.voiceprint is None:
            raise HTTPException(422, {"message": "no recording was usable",
                                      **enrolment.to_json()})
        return {"user": user, **enrolment.to_json()}

    @router.delete("/v1/users/{user}/voices")
    async def erase(request: Request, user: UserId) -> dict[str, Any]:
        require_user(request, user)
        return {"user": user, "erased": store.erase(user)}

    return router
