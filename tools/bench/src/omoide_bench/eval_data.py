"""Checking ``omoide eval`` data files before a run, with line numbers.

The evaluator (:mod:`omoide_bench.eval`) trusts its input; these checks run first,
so a missing key, a bad date or a broken line is reported as ``FILE: line N: ...``
for every bad line at once instead of a traceback minutes into a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from omoide.memory.memory_json import describe_validation_error
from omoide.time_bounds import SaneDatetime

MAX_PROBLEMS = 50


class _ProbeMemory(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: StrictStr
    text: StrictStr = Field(min_length=1)
    created_at: SaneDatetime


class _ProbeQuery(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: StrictStr = Field(min_length=1)
    expect: list[StrictStr] = Field(default_factory=list)
    group: StrictStr | None = None


class ProbeScenario(BaseModel):
    """One line of a probe-format file (``shared/memory.md``)."""

    model_config = ConfigDict(extra="allow")
    id: StrictStr
    user: StrictStr
    now: SaneDatetime
    memories: list[_ProbeMemory]
    queries: list[_ProbeQuery]


class _LocomoQuestion(BaseModel):
    model_config = ConfigDict(extra="allow")
    question: Any
    evidence: list[Any] = Field(default_factory=list)


class _LocomoSample(BaseModel):
    model_config = ConfigDict(extra="allow")
    conversation: dict[str, Any]
    qa: list[_LocomoQuestion]


def check_probe_file(path: Path) -> list[str]:
    """Problems of a probe-format JSON lines file (empty when it is fine)."""
    problems: list[str] = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [f"{path}: cannot read: {exc.strerror}"]
    for number, line in enumerate(raw.split(b"\n"), 1):
        if len(problems) >= MAX_PROBLEMS:
            problems.append(f"{path}: ... (stopped after {MAX_PROBLEMS} problems)")
            break
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{path}: line {number}: not valid UTF-8 (byte {exc.start + 1})")
            continue
        if not text.strip():
            continue
        try:
            ProbeScenario.model_validate(pydantic_core.from_json(text))
        except ValueError as exc:   # ValidationError is a ValueError too
            message = (describe_validation_error(exc) if isinstance(exc, ValidationError)
                       else f"not JSON: {exc}")
            problems.append(f"{path}: line {number}: {message}")
    return problems


def check_locomo_file(path: Path) -> list[str]:
    """Problems of a LoCoMo JSON file (a list of samples)."""
    try:
        data = pydantic_core.from_json(path.read_bytes())
    except OSError as exc:
        return [f"{path}: cannot read: {exc.strerror}"]
    except ValueError as exc:
        return [f"{path}: not JSON: {exc}"]
    if not isinstance(data, list):
        return [f"{path}: expected a JSON list of LoCoMo samples"]
    problems = []
    for i, sample in enumerate(data, 1):
        try:
            _LocomoSample.model_validate(sample)
        except ValidationError as exc:
            problems.append(f"{path}: sample {i}: {describe_validation_error(exc)}")
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems
