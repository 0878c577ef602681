"""Find model weights on this machine: a local directory, the ModelScope cache or the
Hugging Face cache. Never downloads: fetching weights is ``omoide download``'s job, so a
server start never blocks on (or fails half-way through) a multi-GB transfer."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Literal

from omoide.errors import ModelNotAvailable

log = logging.getLogger("omoide.weights")

WeightSource = Literal["auto", "modelscope", "huggingface"]


def space_name(model: str) -> str:
    """The model's name without its hub owner or directory, e.g. ``Qwen3-Embedding-0.6B``.

    A hub id and a local copy of the same model name the same vector space.
    """
    return Path(model.rstrip("/\\")).name or model


def resolve_weights(model: str, source: WeightSource, cache_dir: str | None, what: str) -> str:
    """Return a local directory holding ``model``'s weights.

    ``model`` is a directory or a hub id. Raises :class:`ModelNotAvailable` naming the
    model and the ``omoide download`` command when nothing is found.
    """
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotAvailable(f"{what}: {path} has no config.json (not a model directory)",
                                    hint=f"omoide download <model id> --to {path}")
        return str(path)
    tried: list[str] = []
    if source in ("auto", "modelscope") and importlib.util.find_spec("modelscope") is not None:
        tried.append("ModelScope cache")
        try:
            from modelscope import snapshot_download as ms_snapshot

            return str(ms_snapshot(model, cache_dir=cache_dir, local_files_only=True))
        except Exception as exc:  # noqa: BLE001 - any failure means "not cached here"
            log.debug("%s: %s not in the ModelScope cache: %s", what, model, exc)
    if source in ("auto", "huggingface") and importlib.util.find_spec("huggingface_hub"):
        tried.append("Hugging Face cache")
        try:
            from huggingface_hub import snapshot_download as hf_snapshot

            return str(hf_snapshot(model, cache_dir=cache_dir, local_files_only=True))
        except Exception as exc:  # noqa: BLE001 - any failure means "not cached here"
            log.debug("%s: %s not in the Hugging Face cache: %s", what, model, exc)
    where = ", ".join(tried) or "no hub cache"
    raise ModelNotAvailable(f"{what}: weights of {model} are not on this machine"
                            f" (looked in: {where})", hint=f"omoide download {model}")
