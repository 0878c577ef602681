"""The remote backend of :class:`omoide.memory_client.MemoryClient`: a running
server's HTTP API, called with the admin token from the data dir."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import httpx

from omoide.config import Settings
from omoide.data_dir_owner import RunningServer, find_server
from omoide.memory_client.interface import MemoryClientError, NeedsLocalStore
from omoide.server.postgres_tokens import token_store


def _path_user(user: str) -> str:
    return quote(user, safe="")


class RemoteMemoryClient:
    """Memory control through the server that holds the data dir."""

    def __init__(self, http: httpx.AsyncClient, server: RunningServer) -> None:
        self._http = http
        self.server = server
        self.where = f"the running server at {server.url} (pid {server.pid})"

    @classmethod
    @asynccontextmanager
    async def connect(cls, settings: Settings, server: RunningServer, *, wait_s: float,
                      ) -> AsyncIterator[RemoteMemoryClient]:
        """Wait (up to ``wait_s``) until the server listens and is ready, then connect."""
        deadline = time.monotonic() + wait_s
        while not server.url:
            if time.monotonic() > deadline:
                raise MemoryClientError(f"a server (pid {server.pid}) holds "
                                        f"{settings.data_dir} but does not listen yet")
            await asyncio.sleep(0.2)
            found = find_server(settings.data_dir)
            if found is None:
                raise MemoryClientError("the server holding the data dir stopped")
            server = found
        token = token_store(settings.data_dir, settings.envelope.database.url).admin_token()
        async with httpx.AsyncClient(base_url=server.url, timeout=httpx.Timeout(600, connect=5),
                                     headers={"Authorization": f"Bearer {token}"}) as http:
            client = cls(http, server)
            await client._wait_ready(deadline)
            yield client

    async def _wait_ready(self, deadline: float) -> None:
        told = False
        while True:
            try:
                health = (await self._http.get("/healthz")).json()
            except (httpx.HTTPError, ValueError) as exc:
                raise MemoryClientError(
                    f"{self.where} does not answer ({type(exc).__name__}); if it hangs, "
                    "stop it and run the command again") from None
            status = health.get("status") if isinstance(health, dict) else None
            if status in ("ready", "degraded"):
                return
            if status == "failed" or time.monotonic() > deadline:
                raise MemoryClientError(f"{self.where} is {status or 'not answering'}; see "
                                        "its log or GET /healthz")
            if not told:
                print(f"waiting for {self.where} to finish starting...", file=sys.stderr)
                told = True
            await asyncio.sleep(0.5)

    async def _call(self, method: str, url: str, *, ok: tuple[int, ...] = (200,),
                    **kwargs: Any) -> httpx.Response:
        try:
            response = await self._http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise MemoryClientError(f"{self.where}: {type(exc).__name__}: {exc}") from None
        if response.status_code in ok:
            return response
        if response.status_code == 401:
            raise MemoryClientError(f"{self.where} refused the admin token of this data dir "
                                    "(does the server use another data dir?)")
        raise MemoryClientError(f"{self.where} answered {response.status_code}: "
                                f"{_error_text(response)}")

    async def list_memories(self, user: str) -> list[dict[str, Any]]:
        r = await self._call("GET", f"/v1/users/{_path_user(user)}/memories")
        return list(r.json()["memories"])

    async def search(self, user: str, text: str, limit: int) -> list[dict[str, Any]]:
        r = await self._call("GET", f"/v1/users/{_path_user(user)}/memories",
                             params={"q": text, "limit": limit})
        return list(r.json()["memories"])

    async def show(self, user: str, memory_id: str) -> dict[str, Any] | None:
        r = await self._call("GET", f"/v1/users/{_path_user(user)}/memories/"
                                    f"{quote(memory_id, safe='')}", ok=(200, 404))
        return None if r.status_code == 404 else dict(r.json())

    async def forget(self, user: str, memory_id: str) -> bool:
        r = await self._call("DELETE", f"/v1/users/{_path_user(user)}/memories/"
                                       f"{quote(memory_id, safe='')}", ok=(200, 404))
        return r.status_code == 200

    async def export(self, user: str) -> list[dict[str, Any]]:
        r = await self._call("GET", f"/v1/users/{_path_user(user)}/memories/export")
        return [json.loads(line) for line in r.text.splitlines() if line.strip()]

    async def import_file(self, user: str, data: bytes, *, skip_invalid: bool,
                          ) -> tuple[bool, dict[str, Any]]:
        kind = "application/json" if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") \
            else "application/x-ndjson"
        r = await self._call("POST", f"/v1/users/{_path_user(user)}/memories/import",
                             content=data, headers={"content-type": kind},
                             params={"skip_invalid": "true" if skip_invalid else "false"},
                             ok=(200, 422, 503))
        return r.status_code == 200, dict(r.json())

    async def pending(self, user: str | None) -> list[dict[str, Any]]:
        r = await self._call("GET", "/v1/memory/pending",
                             params={"user": user} if user else None)
        return list(r.json()["pending"])

    async def extract(self, user: str) -> dict[str, Any]:
        r = await self._call("POST", "/v1/memory/extract", json={"user": user})
        return dict(r.json())

    async def dead_letters(self, user: str | None) -> list[dict[str, Any]]:
        r = await self._call("GET", "/v1/memory/quarantine",
                             params={"user": user} if user else None)
        return list(r.json()["quarantined"])

    async def retry(self, user: str, exchange_ids: list[str] | None) -> list[str]:
        r = await self._call("POST", "/v1/memory/retry",
                             json={"user": user, "exchange_ids": exchange_ids})
        return list(r.json()["released"])

    async def skip(self, user: str, exchange_ids: list[str] | None) -> list[str]:
        r = await self._call("POST", "/v1/memory/skip",
                             json={"user": user, "exchange_ids": exchange_ids})
        return list(r.json()["skipped"])

    async def reembed(self, users: list[str] | None) -> dict[str, int]:
        raise NeedsLocalStore(
            f"reembed rewrites the whole store with the configured embedder; {self.where} "
            "has the store (and embeds with the embedder it started with): stop it first")


    async def profile(self, user: str, everything: bool) -> dict[str, Any]:
        r = await self._call("GET", f"/v1/users/{_path_user(user)}/profile",
                             params={"all": "true" if everything else "false"})
        return dict(r.json())

    async def profile_set(self, user: str, text: str | None, memory_id: str | None,
                          category: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"text": text} if text is not None else {"memory_id": memory_id}
        if category:
            body["category"] = category
        r = await self._call("POST", f"/v1/users/{_path_user(user)}/profile", json=body)
        return dict(r.json()["memory"])

    async def profile_forget(self, user: str, memory_id: str, keep_memory: bool) -> bool:
        r = await self._call("DELETE", f"/v1/users/{_path_user(user)}/profile/"
                                       f"{quote(memory_id, safe='')}",
                             params={"keep_memory": "true" if keep_memory else "false"},
                             ok=(200, 404))
        return r.status_code == 200


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        problems = body.get("problems")
        text = str(body.get("error") or body)
        if isinstance(problems, list) and problems:
            text += "; " + "; ".join(f"{p.get('path', '')}: {p.get('message', '')}"
                                     for p in problems if isinstance(p, dict))
        return text
    return str(body)[:300]
