"""The owner's JSON API for robots (what the console shows and does).

- ``GET /v1/devices``: paired robots (person, household, display name, online, last
  seen, firmware, board, client id, serial number, whether it signed its activation)
  and robots waiting with an activation code;
- ``GET /v1/devices/{device_id}``: one paired robot;
- ``POST /v1/devices/pair`` ``{"code", "user", "name"?}``: pair the robot showing
  ``code`` with a person (replaces an earlier pairing of that robot: re-pairing);
- ``PATCH /v1/devices/{device_id}`` ``{"name"}``: rename (null or "" removes the name);
- ``PATCH /v1/devices/{device_id}/household`` ``{"add"?, "remove"?, "default_person"?}``:
  add and remove members and set who answers when no voice is recognised
  (``default_person``: a person, who joins if need be; null: a guest; absent: as it
  was). A robot's JSON carries ``household``: ``{"members": [...], "default_person":
  "alice" | null, "guest": bool}``; ``user`` is the default person (or, while guests
  answer, the member it was paired to).
- ``POST /v1/devices/{device_id}/revoke``: refuse the robot from now on (a connected
  one is disconnected at once).

These routes are outside the device's public prefix, so the server's management
authentication applies to them; they answer no CORS.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from omoide_device_stackchan.identifiers import normalize_device_id
from omoide_device_stackchan.pairing import (
    KEEP_DEFAULT,
    Pairing,
    PairingError,
    PendingActivation,
    UnknownCode,
    UnknownDevice,
)

if TYPE_CHECKING:
    from omoide_device_stackchan.connection import DeviceConnection
    from omoide_device_stackchan.pairing import PairingStorage

PREFIX = "/v1/devices"


class ManagedDevices(Protocol):
    """What the management API reads of the device service
    (:class:`omoide_device_stackchan.service.StackChanService`)."""

    @property
    def pairings(self) -> PairingStorage: ...

    @property
    def connections(self) -> dict[str, DeviceConnection]:
        """The open connections, by device id."""
        ...


class PairIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str = Field(min_length=1, max_length=16, description="The code the robot shows.")
    user: str = Field(min_length=1, max_length=64, description="Whose memories it uses.")
    name: str | None = Field(None, max_length=64, description="Display name.")


class RenameIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(max_length=64, description="Display name; null removes it.")


class HouseholdIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    add: list[str] = Field(default_factory=list, max_length=16,
                           description="Person ids who join the household.")
    remove: list[str] = Field(default_factory=list, max_length=16,
                              description="Person ids who leave it.")
    default_person: str | None = Field(
        None, max_length=64, description="Who answers when no voice is recognised: a "
        "person (who joins if need be), or null for a guest. Absent: unchanged.")


def _when(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat() if ts else None


def pairing_json(p: Pairing, online: bool) -> dict[str, Any]:
    household = p.household
    return {"device_id": p.device_id, "user": p.user, "name": p.name,
            "household": {"members": list(household.members),
                          "default_person": household.default_person,
                          "guest": household.guest_by_default},
            "state": "active" if p.active else "revoked", "online": online,
            "last_seen": _when(p.last_seen), "paired_at": _when(p.paired_at),
            "revoked_at": _when(p.revoked_at), "client_id": p.client_id,
            "serial_number": p.serial_number, "signed": p.activation_hmac is not None,
            "firmware": {"version": p.firmware_version, "board": p.board,
                         "application": p.application}}


def pending_json(p: PendingActivation) -> dict[str, Any]:
    return {"code": p.code, "device_id": p.device_id, "client_id": p.client_id,
            "serial_number": p.serial_number, "signed": p.activation_hmac is not None,
            "requested_at": _when(p.requested_at), "expires_at": _when(p.expires_at),
            "source": p.source, "repair_of": p.repair_of,
            "firmware": {"version": p.firmware_version, "board": p.board,
                         "application": p.application}}


def management_router(service: ManagedDevices) -> APIRouter:
    router = APIRouter(prefix=PREFIX, tags=["devices"])
    store = service.pairings

    def device_json(p: Pairing) -> dict[str, Any]:
        return pairing_json(p, p.active and p.device_id in service.connections)

    def error(status: int, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status)

    @router.get("")
    async def list_devices() -> dict[str, Any]:
        pairings, pending = await asyncio.to_thread(lambda: (store.pairings(), store.pending()))
        return {"devices": [device_json(p) for p in pairings],
                "pending": [pending_json(p) for p in pending]}

    @router.get("/{device_id}", response_model=None)
    async def show(device_id: str) -> dict[str, Any] | JSONResponse:
        pairing = await asyncio.to_thread(store.get, device_id)
        if pairing is None:
            return error(404, UnknownDevice(f"device {device_id[:80]!r} is not paired"))
        return {"device": device_json(pairing)}

    @router.post("/pair", status_code=201, response_model=None)
    async def pair(body: PairIn) -> dict[str, Any] | JSONResponse:
        try:
            pairing = await asyncio.to_thread(store.pair_by_code, body.code, body.user,
                                              body.name)
        except UnknownCode as exc:
            return error(404, exc)
        except PairingError as exc:
            return error(400, exc)
        return {"device": device_json(pairing)}

    @router.patch("/{device_id}", response_model=None)
    async def rename(device_id: str, body: RenameIn) -> dict[str, Any] | JSONResponse:
        try:
            pairing = await asyncio.to_thread(store.rename, device_id, body.name)
        except UnknownDevice as exc:
            return error(404, exc)
        except PairingError as exc:
            return error(400, exc)
        return {"device": device_json(pairing)}

    @router.patch("/{device_id}/household", response_model=None)
    async def household(device_id: str, body: HouseholdIn) -> dict[str, Any] | JSONResponse:
        default = body.default_person if "default_person" in body.model_fields_set \
            else KEEP_DEFAULT
        try:
            pairing = await asyncio.to_thread(
                store.update_household, device_id, add=tuple(body.add),
                remove=tuple(body.remove), default=default)
        except UnknownDevice as exc:
            return error(404, exc)
        except PairingError as exc:
            return error(400, exc)
        return {"device": device_json(pairing)}

    @router.post("/{device_id}/revoke", response_model=None)
    async def revoke(device_id: str) -> dict[str, Any] | JSONResponse:
        try:
            pairing = await asyncio.to_thread(store.revoke, device_id)
        except UnknownDevice as exc:
            return error(404, exc)
        conn = service.connections.get(normalize_device_id(device_id))
        if conn is not None:
            await conn.close(1008, "revoked")
        return {"device": device_json(pairing)}

    return router
