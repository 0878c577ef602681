"""The config's schema: YAML -> validated settings, in two phases, every problem at once.

Phase 1 parses the YAML, resolves ``{$env: NAME}`` secrets and validates the
envelope (sections, ``use:`` names, assistant/server/memory settings). Phase 2
validates each component's own ``Config`` once the registry knows the classes.
Every problem carries its YAML path (``asr.model``, ``devices[0].port``), unknown
names get a "did you mean", and nothing is loaded or started.

Secrets (fields marked with :data:`Secret`) must be given as ``{$env: NAME}``,
never literally in the file.

This module is the pure schema: it validates against a registry it is given and loads
no plugin. :mod:`omoide.config_loading` builds the registry a config needs and reads
files; :mod:`omoide.config` offers both under the one name callers know.
"""

from __future__ import annotations

import contextlib
import difflib
import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)

from omoide.config_moves import without_moved_settings
from omoide.errors import ConfigError, ConfigProblem
from omoide.memory.config import DEFAULT_ENGINE, DEFAULT_EXTRACTOR, MemoryConfig
from omoide.moments.config import MomentsSettings
from omoide.stage_spec import StageSpec as StageSpec

if TYPE_CHECKING:
    from omoide.components import Component, StrictConfig
    from omoide.plugins import PluginRegistry


class EnvValue(str):
    """A string that came from ``{$env: NAME}``; remembers the variable's name."""

    env_name: str

    def __new__(cls, value: str, env_name: str) -> EnvValue:
        obj = super().__new__(cls, value)
        obj.env_name = env_name
        return obj


def _require_env(value: Any) -> Any:
    if value is None or isinstance(value, EnvValue | SecretStr):
        return value
    raise ValueError("secrets must be given as {$env: NAME}, not written in the file")


Secret = Annotated[SecretStr | None, BeforeValidator(_require_env)]
"""Type of config fields holding secrets (API keys, token secrets)."""

# YAML section -> component kind
STAGES: dict[str, str] = {"vad": "vad", "asr": "asr", "embed": "embedder", "store": "store",
                          "chat": "chat", "tts": "tts", "turn": "turn",
                          "speaker": "speaker"}
REQUIRED_STAGES = ("asr", "embed", "store", "chat", "tts")
DEFAULT_CHAT_MODEL = "omoide"
"""The name the ``chat:`` model goes by for OpenAI-compatible clients (``model``)."""
# YAML list section -> component kind of each entry
LIST_STAGES: dict[str, str] = {"devices": "device", "tools": "tool"}
ENGINE_SHORTHAND = "memory.engine"
"""``memory.engine: NAME`` is ``memory.retrieve: {use: NAME}``; problems are reported at
the path the YAML used."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AssistantSettings(_Strict):
    name: str = Field("かな", description="The assistant's name, used in the persona.")
    persona: str = Field(
        "あなたは卓上ロボットのスタックチャン「{name}」です。相手のことは「あなた」と呼び、"
        "親しみやすく短く（1〜3文で）話し言葉で答えます。",
        description="Persona prompt; `{name}` is replaced by `name`.")
    timezone: str = Field("Asia/Tokyo", description="IANA time zone of the users.")
    history_exchanges: int = Field(3, ge=0, le=20,
                                   description="Recent exchanges kept in the prompt.")
    history_window_minutes: float = Field(
        10.0, ge=0, description="History is used only if the last utterance is this recent.")
    first_sentence_comma_split: bool = Field(
        True, description="Cut the first sentence at a comma for faster first audio.")
    tts_lookahead: int = Field(2, ge=1, le=8,
                               description="Sentences synthesised ahead of the one playing.")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {v!r}") from exc
        return v


class AuthSettings(_Strict):
    """Who may use the management API and the web page (``server.auth``).

    Every route needs a token except ``/healthz``, the web page's shell and the
    paths devices authenticate themselves (each device's ``public_paths``). The admin
    token lives in ``<data_dir>/auth/admin.token`` (``omoide token show``); per-person
    tokens come from ``omoide token create --user U``.
    """

    loopback_exempt: bool = Field(
        False, description="Treat requests from this machine (127.0.0.1, ::1) as the admin "
                           "without a token. Off by default: any local program or a web "
                           "page's DNS-rebinding trick would otherwise get everything. "
                           "Never turn it on behind a reverse proxy on the same machine.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra names accepted in the Host header, besides localhost names, IP "
                    "literals, server.host, server.public_url's host and this machine's "
                    "hostname. `.example.org` accepts every subdomain. Any other Host is "
                    "refused (421): it protects against DNS rebinding.")
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Extra browser origins (scheme://host[:port]) allowed to call the "
                    "management API, besides the server's own. Requests from any other "
                    "Origin are refused (403); the management API never answers CORS.")
    session_hours: float = Field(
        12.0, gt=0, le=24 * 30,
        description="Lifetime of a browser sign-in (the HttpOnly cookie POST /v1/session "
                    "gives for a token). Rotating or revoking the token ends it at once.")

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, v: list[str]) -> list[str]:
        out = []
        for name in v:
            host = name.strip().lower()
            if not host or any(c in host for c in "/:@ ") or host == ".":
                raise ValueError(f"{name!r} is not a host name (write `example.org`, or "
                                 "`.example.org` for every subdomain; no scheme or port)")
            out.append(host)
        return out

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, v: list[str]) -> list[str]:
        from urllib.parse import urlsplit

        out = []
        for origin in v:
            parts = urlsplit(origin.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname or \
                    parts.path not in ("", "/") or parts.query or parts.fragment:
                raise ValueError(f"{origin!r} is not an origin (scheme://host[:port])")
            out.append(f"{parts.scheme}://{parts.netloc.lower()}")
        return out


class LimitSettings(_Strict):
    """Bounds on what one request may cost (``server.limits``)."""

    max_body_bytes: int = Field(
        64 * 1024, ge=1024,
        description="Largest request body of every route without a larger limit below "
                    "(device routes included); larger is refused with 413 while it streams.")
    max_audio_bytes: int = Field(
        16 * 1024 * 1024, ge=1024,
        description="Largest body of POST /v1/turns/audio (a WAV file).")
    max_import_bytes: int = Field(
        8 * 1024 * 1024, ge=1024,
        description="Largest body of a memory import (POST /v1/users/{user}/memories/import).")
    max_import_items: int = Field(
        10_000, ge=1, description="Most memories one import may carry.")
    max_chat_bytes: int = Field(
        1024 * 1024, ge=1024,
        description="Largest body of POST /v1/chat/completions (the client sends the whole "
                    "conversation, and Home Assistant its entities and tools, each time).")
    new_users_per_source: int = Field(
        30, ge=0,
        description="Most user ids not seen before that one client address (an IPv6 /64) "
                    "may start turns for within `new_users_window_minutes`; more get 429 "
                    "with Retry-After. 0 turns the limit off.")
    new_users_window_minutes: float = Field(
        60.0, gt=0, description="The window of `new_users_per_source`.")
    max_connections: int = Field(
        1000, ge=1,
        description="Most connections open at once (WebSockets included); more are "
                    "answered 503 and closed at once. Lowered at start to what the "
                    "process's open-file limit leaves room for.")
    max_connections_per_source: int = Field(
        64, ge=1,
        description="Most connections one client address (an IPv6 /64) may hold open at "
                    "once, WebSockets included; more are answered 503 and closed at once "
                    "(logged once a minute per address). Addresses in "
                    "server.trusted_proxies are not held to it.")
    header_timeout_s: float = Field(
        10.0, gt=0, le=300,
        description="Seconds a client has to send a request's headers (a WebSocket "
                    "handshake included), counted from its first byte or from the "
                    "connection's start; a connection still sending them is closed.")
    body_timeout_s: float = Field(
        30.0, gt=0, le=600,
        description="Seconds a request body may go without a byte arriving while the "
                    "server waits for it; then the connection is closed (408).")
    max_header_bytes: int = Field(
        32 * 1024, ge=4096, le=1024 * 1024,
        description="Largest request head (request line and headers); larger is "
                    "answered 431 and the connection closed.")
    sign_ins_per_source: int = Field(
        30, ge=1, le=100_000,
        description="Sign-in attempts (POST /v1/session, failed ones included) one client "
                    "address (an IPv6 /64) may make in a moving minute; more get 429 "
                    "with Retry-After.")
    sign_ins_per_token: int = Field(
        20, ge=1, le=100_000,
        description="Sign-ins one token may make in a moving minute, from anywhere; more "
                    "get 429 with Retry-After.")
    sessions_per_token: int = Field(
        10, ge=1, le=10_000,
        description="Browser sessions one token keeps at once: signing in once more ends "
                    "that token's own oldest session, never anyone else's.")
    max_sessions: int = Field(
        10_000, ge=1, le=1_000_000,
        description="Browser sessions open at once in all; when full a new sign-in is "
                    "refused (503) rather than ending someone's session.")


class ServerSettings(_Strict):
    host: str = Field(
        "127.0.0.1",
        description="Address to listen on. The built-in default serves this machine only; "
                    "use 0.0.0.0 for robots on your network (configs/default.yaml does).")
    port: int = Field(8003, ge=1, le=65535, description="Port to listen on.")
    public_url: str | None = Field(
        None, description="Base URL devices use to reach the server (default: from the request).")
    data_dir: str = Field("./data", description="Where journal, stores and pairings live.")
    trace_file: str | None = Field("traces.jsonl",
                                   description="Per-turn traces as JSON lines (relative to "
                                               "data_dir); null turns the file off.")
    traces_kept: int = Field(200, ge=0, description="Recent turn traces kept for the HTTP API.")
    auth: AuthSettings = Field(default_factory=AuthSettings,
                               description="Tokens, allowed hosts and origins.")
    limits: LimitSettings = Field(default_factory=LimitSettings,
                                  description="Request size and rate limits.")
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Addresses or networks (`127.0.0.1`, `10.0.0.0/8`, `::1`) of reverse "
                    "proxies whose Forwarded, X-Forwarded-For/-Proto/-Host and X-Real-IP "
                    "headers name the real client. From any other address these headers "
                    "are removed before anything reads them, so per-address limits count "
                    "the connecting address. Empty by default: no proxy is trusted, not "
                    "even one on this machine.")

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, v: list[str]) -> list[str]:
        out = []
        for entry in v:
            try:
                out.append(str(ipaddress.ip_network(entry.strip(), strict=False)))
            except ValueError:
                raise ValueError(f"{entry!r} is not an address or network (write "
                                 "`127.0.0.1`, `::1` or `10.0.0.0/8`)") from None
        return out


class ToolCallSettings(_Strict):
    """How the chat model's tool calls run (each tool's own ``timeout_s`` bounds a call)."""

    max_rounds: int = Field(3, ge=0, le=10,
                            description="Tool rounds per turn before the model must answer.")
    max_result_chars: int = Field(
        4000, ge=200, le=100_000,
        description="Longest tool result handed to the model; a longer one becomes an "
                    "error saying so (with its beginning).")
    device_timeout_s: float = Field(10.0, gt=0, le=120,
                                    description="Time budget of a call of a device's own "
                                                "(MCP) tool.")
    confirm_window_s: float = Field(
        120.0, gt=0, description="How long a question asking the person to confirm a tool "
                                 "call stays open (it is also closed by their next turn).")


class EmbedFallbackSpec(StageSpec):
    """A secondary embedder used only while it answers and agrees with the primary."""

    min_agreement: float = Field(0.99, ge=0, le=1,
                                 description="Probe cosine the secondary must reach.")
    recheck_seconds: float = Field(300.0, gt=0,
                                   description="How often the secondary is probed again.")


class EmbedSpec(StageSpec):
    fallback: EmbedFallbackSpec | None = Field(None, description="Optional API fallback.")


class DatabaseSettings(_Strict):
    """Where omoide's shared state lives (the journal and its extraction state first).

    Absent, or without ``url``: the embedded SQLite files in ``server.data_dir``, as
    always. A PostgreSQL URL lets several workers share one database
    (:mod:`omoide.database`).
    """

    url: str | None = Field(
        None, description="PostgreSQL URL (postgresql://user@host:port/db), usually "
                          "{$env: OMOIDE_DATABASE_URL}; a URL with a password must come "
                          "from the environment. Unset: the embedded SQLite files.")
    pool_size: int = Field(8, ge=1, le=200,
                           description="Connections each worker keeps open at most.")
    lease_seconds: float = Field(
        300.0, gt=0, le=86400,
        description="How long a worker's claim on exchanges to extract lasts; a worker "
                    "still at work extends it every third of it (a heartbeat), and past "
                    "it another worker takes the work over (a worker that died mid-batch).")

    @field_validator("url", mode="before")
    @classmethod
    def _postgresql_url(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("database.url must be a postgresql:// URL")
        userinfo = value.split("://", 1)[1].split("@", 1)[0] if "@" in value else ""
        if ":" in userinfo and not isinstance(value, EnvValue):
            raise ValueError("a database URL with a password must be given as "
                             "{$env: NAME}, not written in the file")
        return value


class Envelope(_Strict):
    assistant: AssistantSettings = Field(default_factory=AssistantSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    database: DatabaseSettings = Field(
        default_factory=DatabaseSettings,
        description="Shared database (PostgreSQL) for several workers; default SQLite.")
    vad: StageSpec | None = Field(None, description="Server-side VAD (optional).")
    turn: StageSpec | None = Field(
        None, description="End-of-turn detector (optional): finished or pausing? Without "
                          "it the VAD's silence alone ends a turn.")
    speaker: StageSpec | None = Field(
        None, description="Speaker encoder (optional): voiceprints of utterances, to tell "
                          "who is speaking.")
    asr: StageSpec
    embed: EmbedSpec
    store: StageSpec
    chat: StageSpec
    chat_models: dict[str, StageSpec] = Field(
        default_factory=dict,
        description="More chat models by name, for the OpenAI-compatible endpoint's "
                    "`model` (POST /v1/chat/completions, GET /v1/models): `{fast: {use: "
                    "modelscope, model: ...}}`. `chat:` stays the default (listed as "
                    "`omoide`); robots, extraction and /v1/turns use only `chat:`.")
    tts: StageSpec
    devices: list[StageSpec] = Field(default_factory=list, description="Device transports.")
    tools: list[StageSpec] = Field(default_factory=list,
                                   description="Tools (skills) the chat model may call; "
                                               "each is enabled by listing it.")
    tool_calls: ToolCallSettings = Field(default_factory=ToolCallSettings,
                                         description="How tool calls run in a turn.")
    moments: MomentsSettings = Field(default_factory=MomentsSettings,
                                     description="When omoide speaks first: moments "
                                     "planned from memory (plans, birthdays, reminders).")

    @field_validator("chat_models")
    @classmethod
    def _chat_model_names(cls, v: dict[str, StageSpec]) -> dict[str, StageSpec]:
        if DEFAULT_CHAT_MODEL in v:
            raise ValueError(f"{DEFAULT_CHAT_MODEL!r} names the `chat:` model; choose "
                             "another name")
        return v


@dataclass(frozen=True)
class ComponentChoice:
    """A validated stage: the YAML path, the class, its validated config."""

    path: str
    kind: str
    cls: type[Component[Any]]
    config: StrictConfig


@dataclass(frozen=True)
class Settings:
    """A fully validated config."""

    envelope: Envelope
    components: dict[str, ComponentChoice]
    """YAML path ("asr", "embed.fallback", "devices[0]", "memory.retrieve") -> the
    validated choice."""
    source: str | None = None

    @property
    def assistant(self) -> AssistantSettings:
        return self.envelope.assistant

    @property
    def server(self) -> ServerSettings:
        return self.envelope.server

    @property
    def memory(self) -> MemoryConfig:
        return self.envelope.memory

    @property
    def data_dir(self) -> Path:
        return Path(self.envelope.server.data_dir)

    def device_data_dir(self, plugin_id: str) -> Path:
        """Where a device plugin keeps its state (pairings, token secret)."""
        return self.data_dir / "devices" / plugin_id

    def tool_data_dir(self, plugin_id: str) -> Path:
        """Where a tool plugin keeps its state (timers, queued messages)."""
        return self.data_dir / "tools" / plugin_id


# -- phase 1 -----------------------------------------------------------------------
def load_yaml(text: str, source: str | None = None) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        raise ConfigError([ConfigProblem("", f"not valid YAML at {where}: "
                                             f"{getattr(exc, 'problem', exc)}")], source) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem("", "the top level must be a mapping")], source)
    return data


def resolve_env(node: Any, path: str, problems: list[ConfigProblem],
                environ: dict[str, str] | os._Environ[str] = os.environ) -> Any:
    """Replace every ``{$env: NAME}`` by the variable's value (an :class:`EnvValue`)."""
    if isinstance(node, dict):
        if set(node) == {"$env"}:
            name = node["$env"]
            if not isinstance(name, str) or not name:
                problems.append(ConfigProblem(path, "{$env: NAME} needs a variable name"))
                return None
            if name not in environ:
                problems.append(ConfigProblem(
                    path, f"environment variable {name} is not set (export {name}=...)"))
                return None
            return EnvValue(environ[name], name)
        return {k: resolve_env(v, _join(path, str(k)), problems, environ) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve_env(v, f"{path}[{i}]", problems, environ) for i, v in enumerate(node)]
    return node


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _loc_path(prefix: str, loc: Iterable[Any]) -> str:
    path = prefix
    for part in loc:
        path = f"{path}[{part}]" if isinstance(part, int) else _join(path, str(part))
    return path


def pydantic_problems(exc: ValidationError, prefix: str, model: type[BaseModel] | None = None
                      ) -> list[ConfigProblem]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden" and model is not None:
            fields = _fields_at(model, loc[:-1])
            hint = did_you_mean(str(loc[-1]), fields)
            msg = f"unknown setting{hint}" + (f" (known: {', '.join(sorted(fields))})"
                                              if fields and not hint else "")
        problems.append(ConfigProblem(_loc_path(prefix, loc), msg))
    return problems


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        ann = field.annotation
        current = next((a for a in getattr(ann, "__args__", (ann,))
                        if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return list(getattr(current, "model_fields", {}))


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the candidate closest to ``word``, or ""."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_envelope(data: dict[str, Any], source: str | None = None,
                   environ: dict[str, str] | os._Environ[str] = os.environ) -> Envelope:
    """Phase 1 alone. Raises :class:`ConfigError` listing every envelope problem."""
    envelope, _, problems = phase_one(data, environ)
    if problems or envelope is None:
        raise ConfigError(problems, source)
    return envelope


def phase_one(data: dict[str, Any], environ: dict[str, str] | os._Environ[str]
               ) -> tuple[Envelope | None, list[tuple[str, str, StageSpec]], list[ConfigProblem]]:
    """Phase 1: the envelope, the stage specs and every problem. When the envelope
    fails, the stage specs that do parse are still returned so phase 2 can report their
    problems in the same run."""
    problems: list[ConfigProblem] = []
    resolved, moved = without_moved_settings(resolve_env(data, "", problems, environ))
    problems.extend(moved)
    try:
        envelope = Envelope.model_validate(resolved)
    except ValidationError as exc:
        problems.extend(pydantic_problems(exc, "", Envelope))
        return None, _raw_stage_specs(resolved), problems
    return envelope, _stage_specs(envelope), problems


def _raw_stage_specs(data: dict[str, Any]) -> list[tuple[str, str, StageSpec]]:
    out: list[tuple[str, str, StageSpec]] = []

    def add(path: str, kind: str, node: Any, cls: type[StageSpec] = StageSpec) -> None:
        if isinstance(node, dict) and isinstance(node.get("use"), str):
            with contextlib.suppress(ValidationError):  # already reported by the envelope
                out.append((path, kind, cls.model_validate(node)))

    for section, kind in STAGES.items():
        node = data.get(section)
        if section == "embed" and isinstance(node, dict):
            add("embed.fallback", "embedder", node.get("fallback"), EmbedFallbackSpec)
            node = {k: v for k, v in node.items() if k != "fallback"}
        add(section, kind, node)
    named = data.get("chat_models")
    if isinstance(named, dict):
        for name, node in named.items():
            add(f"chat_models.{name}", "chat", node)
    for section, kind in LIST_STAGES.items():
        nodes = data.get(section)
        if isinstance(nodes, list):
            for i, node in enumerate(nodes):
                add(f"{section}[{i}]", kind, node)
    memory = data.get("memory")
    memory = memory if isinstance(memory, dict) else {}
    if "retrieve" in memory:
        add("memory.retrieve", "memory_engine", memory["retrieve"])
    elif isinstance(memory.get("engine"), str):
        add(ENGINE_SHORTHAND, "memory_engine", {"use": memory["engine"]})
    else:
        add("memory.retrieve", "memory_engine", {"use": DEFAULT_ENGINE})
    add("memory.extract", "extractor", memory.get("extract", {"use": DEFAULT_EXTRACTOR}))
    return out


def wanted_components(envelope: Envelope) -> list[tuple[str, str]]:
    """The ``(kind, name)`` pairs a config uses: what the plugin loader must load."""
    return [(kind, spec.use) for _, kind, spec in _stage_specs(envelope)]


def _stage_specs(envelope: Envelope) -> list[tuple[str, str, StageSpec]]:
    out: list[tuple[str, str, StageSpec]] = []
    for section, kind in STAGES.items():
        spec = getattr(envelope, section)
        if spec is not None:
            out.append((section, kind, spec))
    if envelope.embed.fallback is not None:
        out.append(("embed.fallback", "embedder", envelope.embed.fallback))
    out.extend((f"chat_models.{name}", "chat", spec)
               for name, spec in envelope.chat_models.items())
    out.extend((f"devices[{i}]", "device", spec) for i, spec in enumerate(envelope.devices))
    out.extend((f"tools[{i}]", "tool", spec) for i, spec in enumerate(envelope.tools))
    memory = envelope.memory
    shorthand = memory.retrieve is None and memory.engine is not None
    out.append((ENGINE_SHORTHAND if shorthand else "memory.retrieve", "memory_engine",
                memory.retrieve_stage))
    out.append(("memory.extract", "extractor", memory.extract))
    return out


# -- phase 2 -----------------------------------------------------------------------
def validate_stages(specs: list[tuple[str, str, StageSpec]], registry: PluginRegistry
                    ) -> tuple[dict[str, ComponentChoice], list[ConfigProblem]]:
    """Phase 2 on ``specs`` (from :func:`phase_one`): the chosen classes and every problem."""
    problems: list[ConfigProblem] = []
    choices: dict[str, ComponentChoice] = {}
    for path, kind, spec in specs:
        use_path = path if path == ENGINE_SHORTHAND else _join(path, "use")
        cls = registry.components[kind].get(spec.use)
        if cls is None:
            broken = registry.failed_provider(kind, spec.use)
            if broken is not None:
                msg = (f"{kind} {spec.use!r} comes from plugin {broken.name}, which failed to"
                       f" load: {broken.error}")
            else:
                available = registry.available(kind)
                msg = (f"unknown {kind} {spec.use!r}{did_you_mean(spec.use, available)};"
                       f" available: {', '.join(available) or 'none installed'}")
            problems.append(ConfigProblem(use_path, msg))
            continue
        try:
            config = cls.Config.model_validate(spec.options)
        except ValidationError as exc:
            problems.extend(pydantic_problems(exc, path, cls.Config))
            continue
        key = "memory.retrieve" if path == ENGINE_SHORTHAND else path
        choices[key] = ComponentChoice(key, kind, cls, config)
    names = [s.use for p, _, s in specs if p.startswith("devices[")]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(ConfigProblem("devices", f"device {dup!r} is listed twice"))
    return choices, problems


def validate_components(envelope: Envelope, registry: PluginRegistry,
                        source: str | None = None) -> Settings:
    """Phase 2 alone: check every ``use:`` name and each component's own config."""
    choices, problems = validate_stages(_stage_specs(envelope), registry)
    if problems:
        raise ConfigError(problems, source)
    return Settings(envelope, choices, source)


def json_schema(registry: PluginRegistry) -> dict[str, Any]:
    """JSON schema of the whole config, with each stage's options per registered name."""
    schema = Envelope.model_json_schema()
    components: dict[str, Any] = {}
    for kind, by_name in registry.components.items():
        components[kind] = {name: cls.Config.model_json_schema()
                            for name, cls in sorted(by_name.items())}
    schema["x-omoide-components"] = components
    return schema
