"""CORS for the device endpoints only: browser clients of the xiaozhi protocol (the web
test page of the reference's server family) call OTA and activation from another
origin, so every answer there, errors included, says any origin may read it.

The endpoints carry no cookies and no ambient authority (a robot proves itself with
its own ids and device token), so ``*`` gives a page nothing it could not get by
asking itself. The management API (``/v1/devices``...) is not routed through here and
answers no CORS at all: a browser refuses it to other origins.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

ALLOWED_HEADERS = ("Content-Type, Device-Id, Client-Id, Activation-Version, Serial-Number, "
                   "Authorization, Accept-Language, Protocol-Version")
ALLOWED_METHODS = "GET, HEAD, POST, OPTIONS"


def cors_headers() -> dict[str, str]:
    return {"Access-Control-Allow-Origin": "*",
            "Access-Control-Allow-Headers": ALLOWED_HEADERS,
            "Access-Control-Allow-Methods": ALLOWED_METHODS,
            "Access-Control-Max-Age": "600"}


def preflight(request: Request) -> Response:
    """The answer to an ``OPTIONS`` preflight: allowed, including any header asked for."""
    headers = cors_headers()
    asked = request.headers.get("access-control-request-headers")
    if asked:
        headers["Access-Control-Allow-Headers"] = f"{ALLOWED_HEADERS}, {asked}"
    return Response(status_code=204, headers=headers)


class PublicDeviceRoute(APIRoute):
    """A route whose every response (also ``HTTPException`` errors) carries CORS headers."""

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handler = super().get_route_handler()

        async def with_cors(request: Request) -> Response:
            try:
                response = await handler(request)
            except HTTPException as exc:
                response = JSONResponse({"error": exc.detail}, exc.status_code,
                                        headers=dict(exc.headers or {}))
            response.headers.update(cors_headers())
            return response

        return with_cors
