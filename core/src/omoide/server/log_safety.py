"""Log lines that cannot carry secrets or terminal control sequences.

- :func:`redact_secrets`: values of ``authorization``, ``token`` and similar query
  parameters become ``REDACTED`` (a StackChan passes its device token as
  ``?authorization=...`` on the WebSocket URL, which uvicorn's access log would
  otherwise print), and so do ``Bearer ...`` values and anything shaped like an
  omoide token.
- :func:`neutralise_controls`: control characters (ANSI escapes, NUL, CR/LF that
  would forge a second log line) are written as ``\\x1b``-style escapes.
- :class:`SafeFormatter` applies both to every record; :func:`uvicorn_log_config`
  is the logging set-up ``omoide serve`` hands uvicorn, so the access log, uvicorn's
  own messages and omoide's loggers all go through it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from omoide.server.tokens import TOKEN_PATTERN

SECRET_PARAMETERS = ("authorization", "token", "access_token", "id_token", "refresh_token",
                     "auth", "api_key", "apikey", "key", "secret", "password", "passwd",
                     "session", "signature", "sig")
"""Query parameter names whose values never reach a log line."""

_PARAM = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(" + "|".join(re.escape(p) for p in SECRET_PARAMETERS)
    + r")(=|%3D)([^&\s\"'#]*)")
_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20|\+)[A-Za-z0-9._~+/=-]+")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
REDACTED = "REDACTED"


def redact_secrets(text: str) -> str:
    """``/xiaozhi/v1/?authorization=Bearer%20abc&x=1`` -> ``...authorization=REDACTED&x=1``."""
    text = _PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return TOKEN_PATTERN.sub(REDACTED, text)


def neutralise_controls(text: str, *, keep_newlines: bool = False) -> str:
    """Control characters as visible escapes (``\\x1b``); newlines kept only if asked
    (tracebacks), never in a message, where they would forge a second log line."""
    def escape(m: re.Match[str]) -> str:
        ch = m.group(0)
        if keep_newlines and ch == "\n":
            return ch
        return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"

    return _CONTROLS.sub(escape, text)


class SafeFormatter(logging.Formatter):
    """A formatter whose output carries no secrets and no control characters.

    The message (with its arguments: user ids, paths, texts, URLs) is redacted and
    escaped; a traceback keeps its line breaks but nothing else.
    """

    def formatMessage(self, record: logging.LogRecord) -> str:
        return neutralise_controls(redact_secrets(super().formatMessage(record)))

    def formatException(self, ei: Any) -> str:
        return neutralise_controls(redact_secrets(super().formatException(ei)),
                                   keep_newlines=True)

    def formatStack(self, stack_info: str) -> str:
        return neutralise_controls(redact_secrets(super().formatStack(stack_info)),
                                   keep_newlines=True)


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def uvicorn_log_config(level: str = "INFO", *, root_level: str = "WARNING",
                       ) -> dict[str, Any]:
    """``logging.config.dictConfig`` settings for ``omoide serve``: uvicorn's loggers
    (at ``level``) and every other logger (at ``root_level``: omoide's follow ``-v``),
    all through :class:`SafeFormatter`, to stderr."""
    formatter = {"()": f"{__name__}.SafeFormatter", "fmt": LOG_FORMAT}
    handler = {"class": "logging.StreamHandler", "formatter": "safe",
               "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"safe": formatter},
        "handlers": {"safe": handler},
        "loggers": {
            "uvicorn": {"handlers": ["safe"], "level": level, "propagate": False},
            "uvicorn.error": {"level": level},
            "uvicorn.access": {"handlers": ["safe"], "level": level, "propagate": False},
        },
        "root": {"handlers": ["safe"], "level": root_level},
    }
