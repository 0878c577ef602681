"""Settings that moved: a problem naming the new spelling instead of "unknown setting".

Checked on the parsed YAML before the envelope is validated; a moved setting is
reported at its old path and left out, so every other problem is still found in the
same run.
"""

from __future__ import annotations

from typing import Any

from omoide.errors import ConfigProblem

MOVED: dict[tuple[str, str], str] = {
    ("memory", "robust"): (
        "moved: the robust engine's options sit beside `use:` now; write `memory: {retrieve:"
        " {use: robust, <option>: ...}}` (`index_refresh_s` is `memory.index.refresh_s`)"),
    ("memory", "baseline"): (
        "moved: the baseline engine's options sit beside `use:` now; write `memory:"
        " {retrieve: {use: baseline, <option>: ...}}` (`max_results` is"
        " `memory.max_results`)"),
}


def without_moved_settings(data: dict[str, Any]) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """``data`` without the moved settings it has, and a problem for each."""
    problems: list[ConfigProblem] = []
    out = dict(data)
    for (section, key), message in MOVED.items():
        node = out.get(section)
        if isinstance(node, dict) and key in node:
            out[section] = {k: v for k, v in node.items() if k != key}
            problems.append(ConfigProblem(f"{section}.{key}", message))
    return out, problems
