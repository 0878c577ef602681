"""``omoide embed``, ``omoide similarity`` and ``omoide download``: look at the vectors.

``embed`` prints the vectors the configured embedder makes (through the fallback, if
one is configured, and says which backend answered). ``similarity`` prints the cosine
the retrieval would see between a question and a memory, each embedded the way the
memory engine embeds it — the number one needs when a memory is or is not recalled.
``download`` fetches model weights into the hub cache (or a directory), the one step
that needs the network; components never download on their own.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
from collections.abc import Sequence
from typing import Any

from omoide.commands._common import EXIT_FAILED


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("embed", help="print the vectors the configured embedder makes (JSON)")
    p.add_argument("--config", required=True, help="config file (YAML)")
    p.add_argument("--query", action="store_true",
                   help="embed as queries (with the query instruction), not as memories")
    p.add_argument("texts", nargs="+", metavar="TEXT")
    p.set_defaults(handler=_embed_command)

    p = sub.add_parser("similarity",
                       help="cosine between a question and a memory, as retrieval sees it")
    p.add_argument("--config", required=True, help="config file (YAML)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("query", metavar="TEXT_A", help="what the user says (the query side)")
    p.add_argument("memory", metavar="TEXT_B", help="a stored memory (the document side)")
    p.set_defaults(handler=_similarity_command)

    p = sub.add_parser("download", help="download model weights (needs access to a hub)")
    p.add_argument("model", metavar="MODEL", help="hub id, e.g. Qwen/Qwen3-Embedding-0.6B")
    p.add_argument("--to", metavar="DIR", help="download into DIR (then set `model: DIR`)")
    p.add_argument("--source", choices=("auto", "modelscope", "huggingface"), default="auto",
                   help="hub to use (auto: ModelScope when its package is installed, "
                        "then Hugging Face)")
    p.set_defaults(handler=_download_command)


# -- embed / similarity ---------------------------------------------------------------------
def backend_of(embedder: Any) -> str:
    """Name of the embedder that served the last call (the fallback knows; others are it)."""
    return str(getattr(embedder, "last_backend", None) or embedder.name)


async def _with_embedder(config_path: str, work: Any) -> int:
    from omoide.commands._common import load_or_exit, report_failures
    from omoide.runtime import Runtime

    settings = load_or_exit(config_path)
    runtime = Runtime(settings)

    async def started_work() -> int:
        await runtime.start("embed")
        return int(await work(runtime.embedder, settings))

    try:
        return await report_failures(started_work())
    finally:
        await runtime.stop()


def _embed_command(args: argparse.Namespace) -> int:
    purpose = "query" if args.query else "document"

    async def work(embedder: Any, settings: Any) -> int:
        vectors = await embedder.embed(list(args.texts), purpose)
        print(json.dumps({"backend": backend_of(embedder), "model": embedder.model_id,
                          "dims": embedder.dims, "purpose": purpose,
                          "vectors": [[round(float(x), 6) for x in row] for row in vectors]}))
        return 0

    return asyncio.run(_with_embedder(args.config, work))


async def similarity(embedder: Any, engine: str, query: str, memory: str) -> dict[str, Any]:
    """Cosines between ``query`` and ``memory`` as the memory engines embed them.

    ``cosine`` is what the configured ``engine`` compares: the robust engine embeds the
    query's recall copy (NFKC, fillers and trailing marks stripped) as a query; the
    baseline embeds the raw transcript as a document. Memories are documents.
    """
    from omoide.memory.language.canonical import query_copy

    q_text = query_copy(query)
    q_vec = (await embedder.embed([q_text], "query"))[0]
    backends = {backend_of(embedder)}
    docs = await embedder.embed([memory, query], "document")
    backends.add(backend_of(embedder))
    robust = float(q_vec @ docs[0])
    doc_doc = float(docs[1] @ docs[0])
    return {"engine": engine, "cosine": round(robust if engine == "robust" else doc_doc, 4),
            "robust_query_vs_memory": round(robust, 4),
            "document_vs_document": round(doc_doc, 4),
            "query_as_embedded": q_text, "memory": memory,
            "model": embedder.model_id, "dims": embedder.dims,
            "backend": ",".join(sorted(backends))}


def _similarity_command(args: argparse.Namespace) -> int:
    async def work(embedder: Any, settings: Any) -> int:
        engine = settings.memory.retrieve_stage.use
        result = await similarity(embedder, engine, args.query, args.memory)
        if args.json:
            print(json.dumps(result, ensure_ascii=False))
            return 0
        print(f"cosine ({engine} engine): {result['cosine']:.4f}")
        print(f"  query as embedded:        {result['query_as_embedded']!r} (query form)")
        print(f"  robust (query vs memory): {result['robust_query_vs_memory']:.4f}")
        print(f"  raw text vs memory (doc-doc, the baseline): "
              f"{result['document_vs_document']:.4f}")
        print(f"  embedder: {result['model']} ({result['dims']} dims) via {result['backend']}")
        return 0

    return asyncio.run(_with_embedder(args.config, work))


# -- download -------------------------------------------------------------------------------
def download(model: str, to: str | None, source: str) -> str:
    """Download ``model`` and return its local directory.

    Raises ``RuntimeError`` with a readable reason when no hub is reachable.
    """
    reasons: list[str] = []
    if source in ("auto", "modelscope"):
        if importlib.util.find_spec("modelscope") is None:
            reasons.append("ModelScope: the `modelscope` package is not installed"
                           " (pip install modelscope)")
        else:
            try:
                from modelscope import snapshot_download as ms_download

                return str(ms_download(model, local_dir=to) if to else ms_download(model))
            except Exception as exc:  # noqa: BLE001 - reported with the other hubs' reasons
                reasons.append(f"ModelScope: {_short(exc)}")
    if source in ("auto", "huggingface"):
        if importlib.util.find_spec("huggingface_hub") is None:
            reasons.append("Hugging Face: the `huggingface_hub` package is not installed")
        else:
            try:
                from huggingface_hub import snapshot_download as hf_download

                return str(hf_download(repo_id=model, local_dir=to))
            except Exception as exc:  # noqa: BLE001 - reported with the other hubs' reasons
                reasons.append(f"Hugging Face: {_short(exc)}")
    raise RuntimeError("; ".join(reasons) or "no hub selected")


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _download_command(args: argparse.Namespace) -> int:
    try:
        path = download(args.model, args.to, args.source)
    except RuntimeError as exc:
        print(f"omoide download: cannot download {args.model}.\n  {exc}\n"
              f"  On a machine without access to the model hubs, download it elsewhere,"
              f" copy the directory here and set `model: /path/to/dir` in the config.",
              file=sys.stderr)
        return EXIT_FAILED
    print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - convenience
    from omoide.cli import main as cli_main

    return cli_main(argv)
