"""The error hierarchy plugins raise and the core renders.

Plugins raise these; they never print and never exit. The core retries what is
retryable (``ComponentError.retryable``) and renders the rest for the user.
"""

from __future__ import annotations

from dataclasses import dataclass


class OmoideError(Exception):
    """Base of every error omoide raises on purpose."""


@dataclass(frozen=True)
class ConfigProblem:
    """One problem in a config file: where (a YAML path such as ``asr.model``) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


class ConfigError(OmoideError):
    """The config is invalid. Carries every problem found, not only the first."""

    def __init__(self, problems: list[ConfigProblem], source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        head = f"invalid config{f' {source}' if source else ''}: {len(self.problems)} problem(s)"
        super().__init__("\n".join([head, *(f"  - {p}" for p in self.problems)]))


class PluginLoadError(OmoideError):
    """A plugin could not be loaded (import failed, bad hooks, or a name clash)."""


class ComponentError(OmoideError):
    """A component failed at its work.

    ``retryable`` tells the core whether trying again may help (a 503, a timeout),
    or not (a 401, malformed input).
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class ComponentTimeout(ComponentError):
    """A component call ran past its time budget."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class ModelNotAvailable(OmoideError):
    """Weights or a service a component needs are missing; ``hint`` says how to get them."""

    def __init__(self, message: str, *, hint: str) -> None:
        super().__init__(f"{message}\n  how to fix: {hint}")
        self.hint = hint


class MissingSecret(OmoideError):
    """A ``{$env: NAME}`` secret names an environment variable that is not set."""

    def __init__(self, env_var: str, path: str) -> None:
        super().__init__(f"{path}: environment variable {env_var} is not set")
        self.env_var = env_var
        self.path = path


class EmbedderMismatch(OmoideError):
    """A vector store was filled by a different embedder than the one configured."""


class InvalidInput(OmoideError):
    """Input from a user or device is malformed (bad audio, bad JSON...)."""
