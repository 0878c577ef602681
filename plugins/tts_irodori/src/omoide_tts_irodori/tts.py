"""Irodori-TTS through Irodori-TTS-Server's OpenAI-style speech endpoint.

``POST {url}/v1/audio/speech`` with ``{"model": "irodori-tts", "input": text,
"voice": <reference voice file>, "response_format": "wav", ...options}`` answers a
48 kHz WAV. The server answers 503 while it loads the model or is busy with another
sentence: that is a retryable :class:`ComponentError` (the core retries with backoff).
Any failure of a sentence is a :class:`ComponentError`; the pipeline keeps the
sentence's text on screen and goes on with the next one.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from pydantic import Field

from omoide.api import (
    TTS,
    AudioClip,
    ComponentError,
    InvalidInput,
    Secret,
    TTSConfig,
    read_wav,
    resample,
)

log = logging.getLogger("omoide.tts.irodori")


class IrodoriTTSConfig(TTSConfig):
    retries: int = Field(3, ge=0, le=10,
                         description="Extra attempts while the server is busy/loading (503).")
    url: str = Field("http://127.0.0.1:8088", description="Irodori-TTS-Server base URL.")
    model: str = Field("irodori-tts", description="Model name the server expects.")
    voice: str | None = Field(None, description="Reference voice file name on the server "
                                                "(null: the server's default voice).")
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="More request fields passed as they are "
                                                "(e.g. speed, seed).")
    sample_rate: int | None = Field(None, ge=8000, le=96000,
                                    description="Resample the 48 kHz output to this rate "
                                                "(null: keep the server's rate).")
    api_key: Secret = Field(None, description="Bearer token if the server wants one, "
                                              "as {$env: NAME}.")


def _detail(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason_phrase
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("error") or body.get("errors") or body
        if isinstance(detail, dict):
            detail = detail.get("message", detail)
        return str(detail)[:200]
    return str(body)[:200]


class IrodoriTTS(TTS):
    """HTTP client of Irodori-TTS-Server (one sentence per request)."""

    name: ClassVar[str] = "irodori"
    Config = IrodoriTTSConfig
    config: IrodoriTTSConfig

    def __init__(self, config: IrodoriTTSConfig) -> None:
        super().__init__(config)
        self._client: Any = None

    async def _start(self) -> None:
        import httpx

        headers = {}
        if self.config.api_key is not None:
            headers["Authorization"] = f"Bearer {self.config.api_key.get_secret_value()}"
        self._client = httpx.AsyncClient(base_url=self.config.url.rstrip("/"), headers=headers,
                                         timeout=httpx.Timeout(self.config.timeout_s,
                                                               connect=5.0))

    async def _stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def request_body(self, text: str) -> dict[str, Any]:
        # options first: they may not replace the text, the model or the WAV format
        body: dict[str, Any] = {**self.config.options, "model": self.config.model,
                                "input": text, "response_format": "wav"}
        if self.config.voice is not None:
            body["voice"] = self.config.voice
        return body

    async def _synthesize(self, text: str) -> AudioClip:
        import httpx

        if self._client is None:
            raise ComponentError("tts irodori: not started")
        try:
            response = await self._client.post("/v1/audio/speech", json=self.request_body(text))
        except httpx.TimeoutException as exc:
            raise ComponentError(f"tts irodori: no answer from {self.config.url} in time",
                                 retryable=True) from exc
        except httpx.TransportError as exc:
            raise ComponentError(f"tts irodori: cannot reach {self.config.url} ({exc})",
                                 retryable=True) from exc
        status = response.status_code
        if status in (429, 503):
            wait = response.headers.get("retry-after")
            raise ComponentError(f"tts irodori: server busy (HTTP {status}: {_detail(response)}"
                                 f"{f', retry after {wait}s' if wait else ''})", retryable=True)
        if status >= 500:
            raise ComponentError(f"tts irodori: HTTP {status}: {_detail(response)}",
                                 retryable=True)
        if status >= 400:
            raise ComponentError(f"tts irodori: HTTP {status}: {_detail(response)}")
        try:
            clip = read_wav(response.content)
        except InvalidInput as exc:
            raise ComponentError(f"tts irodori: the server's answer is not a WAV ({exc})") \
                from exc
        if clip.samples.size == 0:
            raise ComponentError("tts irodori: the server returned empty audio")
        if self.config.sample_rate and clip.sample_rate != self.config.sample_rate:
            clip = resample(clip, self.config.sample_rate)
        return clip
