"""Our plugin loader: entry points -> pluggy, with failures isolated per plugin.

Plugins are modules named by entry points in the group ``omoide.plugins``. A
plugin's distribution may also declare what it provides, without being imported,
in the group ``omoide.components`` (entry name ``<kind>.<name>``, value = the plugin
id); the loader then imports only the plugins a config uses. A used name that no
plugin declares makes the loader import every plugin to look for it.

Failures never take the loader down: an import error, a hook that matches no spec
(``check_pending``) or a component name registered twice is recorded in
:attr:`PluginInfo.error` and shown by ``omoide plugins``.
"""

from __future__ import annotations

import importlib
import logging
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any

import pluggy

from omoide import hookspecs
from omoide.components import KINDS, Component
from omoide.errors import PluginLoadError

log = logging.getLogger("omoide.plugins")

ENTRY_POINT_GROUP = "omoide.plugins"
PROVIDES_GROUP = "omoide.components"

# registration hook -> component kind
REGISTRATION_HOOKS: dict[str, str] = {
    "register_vad": "vad", "register_asr": "asr", "register_embedders": "embedder",
    "register_stores": "store", "register_chat_models": "chat", "register_tts": "tts",
    "register_devices": "device", "register_tools": "tool",
    "register_memory_engines": "memory_engine", "register_extractors": "extractor",
    "register_turn_detectors": "turn", "register_speaker_encoders": "speaker",
}


@dataclass
class PluginInfo:
    """One discovered plugin and what became of it."""

    name: str
    distribution: str
    version: str
    module: str
    loaded: bool = False
    hooks: list[str] = field(default_factory=list)
    components: list[tuple[str, str]] = field(default_factory=list)
    declared: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "distribution": self.distribution, "version": self.version,
                "module": self.module, "loaded": self.loaded, "hooks": self.hooks,
                "components": [{"kind": k, "name": n} for k, n in self.components],
                "error": self.error}


@dataclass(frozen=True)
class _EntryPoint:
    name: str
    value: str
    distribution: str
    version: str


def _discover_entry_points() -> tuple[list[_EntryPoint], dict[tuple[str, str], list[str]]]:
    plugins: list[_EntryPoint] = []
    provides: dict[tuple[str, str], list[str]] = {}
    for dist in metadata.distributions():
        dist_name = dist.metadata["Name"] or "?"
        for ep in dist.entry_points:
            if ep.group == ENTRY_POINT_GROUP:
                plugins.append(_EntryPoint(ep.name, ep.value, dist_name, dist.version))
            elif ep.group == PROVIDES_GROUP and "." in ep.name:
                kind, _, comp = ep.name.partition(".")
                provides.setdefault((kind, comp), []).append(ep.value)
    plugins.sort(key=lambda e: (e.name, e.distribution))
    return plugins, provides


class PluginRegistry:
    """Discovers plugins, loads the ones asked for, and holds the registered components."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.problems: list[str] = []
        self.components: dict[str, dict[str, type[Component[Any]]]] = {k: {} for k in KINDS}
        self._owner: dict[tuple[str, str], str] = {}
        self._entry_points: dict[str, _EntryPoint] = {}
        self._provides: dict[tuple[str, str], list[str]] = {}

    # -- discovery -------------------------------------------------------------------
    def discover(self) -> None:
        """Read entry points (no imports). Two distributions claiming one name is an error."""
        eps, self._provides = _discover_entry_points()
        by_name: dict[str, list[_EntryPoint]] = {}
        for ep in eps:
            by_name.setdefault(ep.name, []).append(ep)
        for name, claims in by_name.items():
            first = claims[0]
            info = PluginInfo(name, first.distribution, first.version, first.value)
            info.declared = sorted(k for k, owners in self._provides.items() if name in owners)
            if len({c.distribution for c in claims}) > 1:
                dists = " and ".join(f"{c.distribution} {c.version}" for c in claims)
                info.error = f"plugin name {name!r} is claimed by {dists}; uninstall one"
                info.distribution = ", ".join(c.distribution for c in claims)
                self.problems.append(info.error)
            else:
                self._entry_points[name] = first
            self.plugins[name] = info

    # -- loading ---------------------------------------------------------------------
    def load_all(self) -> None:
        for name in list(self.plugins):
            self.load(name)

    def load_for(self, wanted: Iterable[tuple[str, str]]) -> None:
        """Load the plugins that provide the ``(kind, name)`` components in ``wanted``."""
        missing: list[tuple[str, str]] = []
        for key in set(wanted):
            owners = self._provides.get(key, [])
            if not owners:
                missing.append(key)
            for owner in owners:
                self.load(owner)
        for key in missing:
            if key[1] not in self.components.get(key[0], {}):
                self.load_all()
                return

    def load_module(self, name: str, module: ModuleType) -> PluginInfo:
        """Register an already imported module as plugin ``name`` (for tests and embedding)."""
        info = self.plugins.setdefault(name, PluginInfo(name, "<in-process>", "", module.__name__))
        self._register(info, module)
        return info

    def load(self, name: str) -> PluginInfo | None:
        info = self.plugins.get(name)
        if info is None or info.loaded or info.error is not None:
            return info
        ep = self._entry_points[name]
        try:
            module = importlib.import_module(ep.value.split(":")[0])
        except BaseException as exc:  # noqa: BLE001 - a broken plugin must not break omoide
            info.error = f"import failed: {type(exc).__name__}: {exc}"
            log.debug("plugin %s import failed\n%s", name, traceback.format_exc())
            return info
        self._register(info, module)
        return info

    def _register(self, info: PluginInfo, module: ModuleType) -> None:
        try:
            self.pm.register(module, name=info.name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            info.error = f"invalid hooks: {exc}"
            return
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(module)
            info.error = f"unknown hook: {exc}"
            return
        info.hooks = sorted(impl.name for impl in
                            (c for c in self.pm.get_hookcallers(module) or []))
        registered: list[tuple[str, type[Component[Any]]]] = []
        for hook_name, kind in REGISTRATION_HOOKS.items():
            impls = [i for i in getattr(self.pm.hook, hook_name).get_hookimpls()
                     if i.plugin is module]
            for impl in impls:
                try:
                    impl.function(register=self._collector(kind, registered))
                except BaseException as exc:  # noqa: BLE001
                    info.error = f"{hook_name} raised {type(exc).__name__}: {exc}"
                    self.pm.unregister(module)
                    return
        clashes = [f"{kind} {cls.name!r} is already registered by plugin"
                   f" {self._owner[(kind, cls.name)]}"
                   for kind, cls in registered if (kind, cls.name) in self._owner]
        if clashes:
            info.error = "; ".join(clashes)
            self.problems.append(f"plugin {info.name}: {info.error}")
            self.pm.unregister(module)
            return
        for kind, cls in registered:
            self.components[kind][cls.name] = cls
            self._owner[(kind, cls.name)] = info.name
            info.components.append((kind, cls.name))
        info.loaded = True

    @staticmethod
    def _collector(kind: str, sink: list[tuple[str, type[Component[Any]]]]
                   ) -> Callable[[type[Component[Any]]], None]:
        base = KINDS[kind]

        def register(cls: type[Component[Any]]) -> None:
            if not (isinstance(cls, type) and issubclass(cls, base)):
                raise PluginLoadError(f"{cls!r} is not a subclass of {base.__name__}")
            if not getattr(cls, "name", None):
                raise PluginLoadError(f"{cls.__name__} has no `name`")
            sink.append((kind, cls))
        return register

    # -- queries ---------------------------------------------------------------------
    def owner_of(self, kind: str, name: str) -> str | None:
        return self._owner.get((kind, name))

    def failed_provider(self, kind: str, name: str) -> PluginInfo | None:
        """The broken plugin that declares ``(kind, name)``, if any."""
        for owner in self._provides.get((kind, name), []):
            info = self.plugins.get(owner)
            if info is not None and info.error:
                return info
        return None

    def declared_of_kind(self, kind: str) -> list[tuple[str, str]]:
        """The ``(kind, name)`` components of ``kind`` that installed plugins declare in
        their entry points (nothing imported)."""
        return sorted(key for key in self._provides if key[0] == kind)

    def available(self, kind: str) -> list[str]:
        return sorted(self.components[kind])


def build_registry(wanted: Iterable[tuple[str, str]] | None = None) -> PluginRegistry:
    """Discover plugins and load those providing ``wanted`` (all when None)."""
    registry = PluginRegistry()
    registry.discover()
    if wanted is None:
        registry.load_all()
    else:
        registry.load_for(wanted)
    return registry
