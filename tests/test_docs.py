"""The generated config reference in docs/ matches the installed components."""

from __future__ import annotations

from pathlib import Path

from omoide.config_reference import markdown_reference
from omoide.plugins import build_registry

ROOT = Path(__file__).resolve().parents[1]


def test_config_reference_is_current() -> None:
    generated = markdown_reference(build_registry())
    on_disk = (ROOT / "docs" / "config-reference.md").read_text(encoding="utf-8")
    assert generated.strip() in on_disk, (
        "docs/config-reference.md is stale: regenerate it with"
        " `omoide config schema --markdown` (see the file's header)")
