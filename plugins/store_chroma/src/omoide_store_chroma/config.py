"""Configuration of the `chroma` store: a local directory (``path``) or a server (``host``)."""

from __future__ import annotations

from pydantic import Field, model_validator

from omoide.api import Secret, VectorStoreConfig


class ChromaStoreConfig(VectorStoreConfig):
    """Give exactly one of ``path`` (an embedded persistent store) or ``host`` (a server)."""

    path: str | None = Field(
        None, description="Directory of an embedded persistent Chroma store. Only one process"
                          " should open a directory at a time.")
    host: str | None = Field(None, description="Host name of a Chroma server.")
    port: int = Field(8000, gt=0, lt=65536, description="Port of the Chroma server.")
    ssl: bool = Field(False, description="Use HTTPS to reach the Chroma server.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra HTTP headers sent to the Chroma server (not for secrets: use"
                    " `token`).")
    token: Secret = Field(
        None, description="Bearer token for the Chroma server, as {$env: NAME}.")

    @model_validator(mode="after")
    def _exactly_one_place(self) -> ChromaStoreConfig:
        if (self.path is None) == (self.host is None):
            raise ValueError("give exactly one of `path` (embedded store) or `host` (a server)")
        if self.path is not None and (self.headers or self.token is not None or self.ssl):
            raise ValueError("`ssl`, `headers` and `token` apply only to a server (`host`)")
        return self
