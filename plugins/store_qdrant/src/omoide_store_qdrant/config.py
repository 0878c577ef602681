"""Configuration of the `qdrant` store: where the data lives (exactly one of three places)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from omoide.api import Secret, VectorStoreConfig


class QdrantStoreConfig(VectorStoreConfig):
    """Give exactly one of ``path`` (local mode), ``url`` (a server) or ``location: ":memory:"``."""

    path: str | None = Field(
        None, description="Directory of an embedded (local mode) Qdrant store. Only one process"
                          " may open a path at a time.")
    url: str | None = Field(
        None, description="URL of a Qdrant server or cluster, e.g. http://localhost:6333.")
    api_key: Secret = Field(
        None, description="API key of the Qdrant server, as {$env: NAME}. Only with `url`.")
    location: Literal[":memory:"] | None = Field(
        None, description="\":memory:\" for a throwaway in-process store (tests, demos).")
    prefer_grpc: bool = Field(
        False, description="Talk to the server over gRPC instead of REST. Only with `url`.")
    partition: Literal["auto", "collection", "payload"] = Field(
        "auto", description="How users are kept apart: `collection` (each user's points on"
                            " their own: with `path`, a small local store per user opened on"
                            " demand; in `:memory:` or on a server, a collection per user),"
                            " `payload` (one shared collection, a tenant-indexed `user` field"
                            " in every query), or `auto` (`collection` for `path` and"
                            " `:memory:`, `payload` for a server).")
    max_open_people: int = Field(
        64, ge=1, le=100_000,
        description="With `path`: how many people's local stores stay open at once (the"
                    " least recently used is closed; each open one holds two files and its"
                    " points in memory). Opening one of 100 memories takes about 10 ms.")

    @model_validator(mode="after")
    def _exactly_one_place(self) -> QdrantStoreConfig:
        given = [name for name in ("path", "url", "location") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of `path` (local mode), `url` (a server) or"
                             f" `location: \":memory:\"`; got {given or 'none'}")
        if self.url is None and (self.api_key is not None or self.prefer_grpc):
            raise ValueError("`api_key` and `prefer_grpc` apply only to a server (`url`)")
        return self
