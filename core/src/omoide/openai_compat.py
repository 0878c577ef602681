"""Turn openai SDK exceptions from OpenAI-compatible servers into omoide errors.

For plugins that speak OpenAI-compatible APIs (chat, embeddings) through the openai
SDK; the SDK is imported only when an error is translated.

ModelScope API-Inference answers errors as ``{"errors": {"message": ...}}`` (note the
plural) where OpenAI says ``{"error": {...}}``; both are understood. 408/429/5xx,
network failures and errors reported inside a stream are retryable; 401/403, other
4xx and a stream that is not valid SSE/JSON are not (retrying would burn quota).
"""

from __future__ import annotations

import json
from typing import Any

from omoide.errors import ComponentError

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


def error_message(body: Any) -> str | None:
    """The human message inside an error body, whichever shape the server used."""
    if isinstance(body, dict):
        for key in ("errors", "error"):
            inner = body.get(key)
            if isinstance(inner, dict) and inner.get("message"):
                return str(inner["message"])
            if isinstance(inner, str) and inner:
                return inner
        if body.get("message"):
            return str(body["message"])
    if isinstance(body, str) and body.strip():
        return body.strip()[:300]
    return None


def to_component_error(exc: BaseException, what: str) -> ComponentError:
    """Map an openai SDK exception (or any transport failure) to a :class:`ComponentError`."""
    import openai

    if isinstance(exc, ComponentError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return ComponentError(f"{what}: the server did not answer in time", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message = error_message(exc.body) or exc.message
        if status in (401, 403):
            return ComponentError(f"{what}: HTTP {status}, the API key was refused ({message})",
                                  retryable=False)
        retryable = status in RETRYABLE_STATUS or status >= 500
        return ComponentError(f"{what}: HTTP {status}: {message}", retryable=retryable)
    if isinstance(exc, openai.APIConnectionError):
        return ComponentError(f"{what}: cannot reach the server ({exc})", retryable=True)
    if isinstance(exc, openai.APIError):   # an error event inside the stream
        message = error_message(exc.body) or exc.message
        return ComponentError(f"{what}: the server reported an error: {message}",
                              retryable=True)
    if isinstance(exc, json.JSONDecodeError):
        return ComponentError(f"{what}: malformed stream from the server ({exc})",
                              retryable=False)
    return ComponentError(f"{what}: {type(exc).__name__}: {exc}", retryable=False)
