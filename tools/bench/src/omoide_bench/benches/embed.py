"""``omoide bench embed``: Qwen3-Embedding-0.6B query latency on this CPU.

A randomly initialised model with the full Qwen3-Embedding-0.6B shape (hidden 1024,
28 layers, 16 heads / 8 KV heads, intermediate 3072, vocab 151669) costs the same
compute as the real one, so no download is needed. It is saved once (float32) and
loaded through the real ``qwen`` embedder plugin for each variant:

1. query latency p50/p95 in float32, bfloat16 and int8 (dynamic quantisation) at 1 and
   2 torch threads, and each variant's cosine agreement with float32;
2. query latency while a 64-sentence extraction batch embeds at the same time, with
   the interactive lane (layer-level pre-emption) on and off, against idle latency.
   Target: p95 under the batch <= 1.5x idle p95.

Inputs are made of whitespace-separated words through a word-level tokenizer, so a
"query" is exactly ``--query-tokens`` tokens long (a Japanese question plus the
instruction is about 40 Qwen tokens) and a memory ``--doc-tokens`` tokens.
Random weights make the agreement figures indicative only: trained weights have
outlier activations that int8 handles worse.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from omoide_bench.benches._stats import percentiles

FULL_SHAPE: dict[str, Any] = {
    "vocab_size": 151669, "hidden_size": 1024, "num_hidden_layers": 28,
    "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 3072, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6, "tie_word_embeddings": True}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("embed", help="Qwen3-Embedding-0.6B query latency (dtype, threads, "
                                     "int8, under a concurrent batch)")
    p.add_argument("--iters", type=int, default=12, help="timed queries per variant")
    p.add_argument("--warmup", type=int, default=2, help="untimed queries per variant")
    p.add_argument("--query-tokens", type=int, default=40)
    p.add_argument("--doc-tokens", type=int, default=30)
    p.add_argument("--batch-sentences", type=int, default=64)
    p.add_argument("--batch-size", default="4,16",
                   help="embedder batch_size values to compare (comma-separated)")
    p.add_argument("--preempt", default="on,off",
                   help="interactive lane with layer pre-emption: on, off or both")
    p.add_argument("--under-batch-queries", type=int, default=30,
                   help="queries timed while the batch runs")
    p.add_argument("--dtypes", default="float32,bfloat16,int8")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--concurrency-dtype", default="bfloat16",
                   help="variant used for the under-batch measurement")
    p.add_argument("--layers", type=int, default=FULL_SHAPE["num_hidden_layers"],
                   help="fewer layers for a quick smoke run (not the real shape)")
    p.add_argument("--model-dir", help="reuse/keep the saved random model here")
    p.add_argument("--skip-concurrency", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_run)


def build_model_dir(target: Path, layers: int) -> Path:
    """Save a random full-shape Qwen3 model and a word-level tokenizer into ``target``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3Model

    if (target / "config.json").is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    vocab = {"<|endoftext|>": 0, "[UNK]": 1, **{f"w{i}": i + 2 for i in range(2000)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", special_tokens=[("<|endoftext|>", 0)])
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                            pad_token="<|endoftext|>",
                            unk_token="[UNK]").save_pretrained(target)  # type: ignore[no-untyped-call]
    torch.manual_seed(0)
    config = Qwen3Config(**{**FULL_SHAPE, "num_hidden_layers": layers})  # type: ignore[no-untyped-call]
    Qwen3Model(config).save_pretrained(target)
    return target


def words(n: int, rng: random.Random) -> str:
    return " ".join(f"w{rng.randrange(2000)}" for _ in range(n))


async def _latencies(emb: Any, queries: list[str], warmup: int) -> list[float]:
    for q in queries[:warmup]:
        await emb.embed_query(q)
    out = []
    for q in queries[warmup:]:
        t = time.perf_counter()
        await emb.embed_query(q)
        out.append((time.perf_counter() - t) * 1000)
    return out


async def _start(model_dir: Path, dtype: str, threads: int, **options: Any) -> Any:
    from omoide_bench.benches._components import build_component

    # the registry's `qwen` embedder, as `embed: {use: qwen, ...}` builds it
    emb = build_component("embedder", "qwen", {
        "model": str(model_dir), "dims": 256, "threads": threads, "task": "", "timeout_s": 600,
        "dtype": "float32" if dtype == "int8" else dtype,
        "quantize": "int8" if dtype == "int8" else "none", **options},
        needs="omoide bench embed needs the embed_qwen plugin "
              "(pip install -e plugins/embed_qwen)")
    await emb.start()
    return emb


async def measure(args: argparse.Namespace, model_dir: Path) -> dict[str, Any]:
    import torch

    rng = random.Random(0)
    load_before = [round(x, 2) for x in os.getloadavg()]
    q_len = max(1, args.query_tokens - 3)     # "Instruct:", "Query:…" and the end token
    queries = [words(q_len, rng) for _ in range(args.warmup + args.iters)]
    probe_docs = [words(args.doc_tokens - 1, rng) for _ in range(8)]
    probe_queries = queries[:4]
    report: dict[str, Any] = {"shape": {**FULL_SHAPE, "num_hidden_layers": args.layers},
                              "query_tokens": args.query_tokens, "doc_tokens": args.doc_tokens,
                              "torch_default_threads": torch.get_num_threads(),
                              "load_average_before": load_before,
                              "variants": [], "concurrency": []}
    reference: np.ndarray | None = None
    for dtype in [d.strip() for d in args.dtypes.split(",") if d.strip()]:
        for n in [int(t) for t in args.threads.split(",")]:
            t0 = time.perf_counter()
            emb = await _start(model_dir, dtype, n)
            load_s = time.perf_counter() - t0
            try:
                await emb.embed(probe_docs, "document")   # warm-up of the batch worker
                vecs = np.concatenate([await emb.embed(probe_docs, "document"),
                                       await emb.embed(probe_queries, "query")])
                if dtype == "float32" and reference is None:
                    reference = vecs
                agreement = (None if reference is None
                             else float(np.min(np.sum(vecs * reference, axis=1))))
                lat = await _latencies(emb, queries, args.warmup)
            finally:
                await emb.stop()
            row = {"dtype": dtype, "threads": n, "load_s": round(load_s, 1),
                   "min_cosine_vs_float32": None if agreement is None
                   else round(agreement, 5), **percentiles(lat)}
            report["variants"].append(row)
            _progress(f"{dtype:9s} threads={n}: p50 {row['p50']:.0f} ms"
                      f"  p95 {row['p95']:.0f} ms  agreement {row['min_cosine_vs_float32']}")
    report["load_average_after_variants"] = [round(x, 2) for x in os.getloadavg()]
    if not args.skip_concurrency:
        max_threads = max(int(t) for t in args.threads.split(","))
        for size in [int(b) for b in args.batch_size.split(",")]:
            for mode in [m.strip() for m in args.preempt.split(",") if m.strip()]:
                report["concurrency"].append(await _under_batch(
                    args, model_dir, queries, rng, mode == "on", max_threads, size))
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return report


async def _under_batch(args: argparse.Namespace, model_dir: Path, queries: list[str],
                       rng: random.Random, preempt: bool, threads: int,
                       batch_size: int) -> dict[str, Any]:
    emb = await _start(model_dir, args.concurrency_dtype, threads,
                       preempt=preempt, batch_size=batch_size)
    try:
        batch_texts = [words(args.doc_tokens - 1, rng) for _ in range(args.batch_sentences)]
        # warm both threads (batch worker and interactive lane) and the kernels for the
        # batch shapes, so the first timed calls do not pay one-off costs
        await emb.embed(batch_texts[:batch_size], "document")
        idle = await _latencies(emb, queries, args.warmup)
        under: list[float] = []
        batch_times: list[float] = []

        async def run_batch() -> None:
            t = time.perf_counter()
            await emb.embed(batch_texts, "document")
            batch_times.append((time.perf_counter() - t) * 1000)

        batch = asyncio.create_task(run_batch())
        i = 0
        while len(under) < args.under_batch_queries:
            if batch.done():
                await batch
                batch = asyncio.create_task(run_batch())
            await asyncio.sleep(rng.uniform(0.05, 0.3))   # arrive at a random moment
            t = time.perf_counter()
            await emb.embed_query(queries[i % len(queries)])
            under.append((time.perf_counter() - t) * 1000)
            i += 1
        await batch
    finally:
        await emb.stop()
    idle_p, under_p = percentiles(idle), percentiles(under)
    row = {"dtype": args.concurrency_dtype, "threads": threads, "preempt": preempt,
           "batch_size": batch_size, "batch_sentences": args.batch_sentences,
           "idle": idle_p, "under_batch": under_p,
           "p50_ratio": round(under_p["p50"] / idle_p["p50"], 2) if idle_p["p50"] else None,
           "p95_ratio": round(under_p["p95"] / idle_p["p95"], 2) if idle_p["p95"] else None,
           "batch_ms": percentiles(batch_times),
           "load_average": [round(x, 2) for x in os.getloadavg()]}
    _progress(f"under batch (batch_size={batch_size}, preempt={preempt}): idle p95"
              f" {idle_p['p95']:.0f} ms, under batch p95 {under_p['p95']:.0f} ms"
              f" (x{row['p95_ratio']}), batch {row['batch_ms']['p50']:.0f} ms")
    return row


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    if args.model_dir:
        model_dir = build_model_dir(Path(args.model_dir), args.layers)
        report = asyncio.run(measure(args, model_dir))
    else:
        with tempfile.TemporaryDirectory(prefix="omoide-bench-embed-") as tmp:
            _progress("building a random Qwen3-Embedding-0.6B-shaped model ...")
            model_dir = build_model_dir(Path(tmp), args.layers)
            report = asyncio.run(measure(args, model_dir))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"Qwen3-Embedding-0.6B shape ({args.layers} layers), query {args.query_tokens}"
          f" tokens, random weights; load average before {report['load_average_before']},"
          f" after {report['load_average_after']}")
    print(f"{'variant':10s} {'thr':>3s} {'p50 ms':>8s} {'p95 ms':>8s} {'cos vs f32':>10s}")
    for r in report["variants"]:
        cos = "-" if r["min_cosine_vs_float32"] is None else f"{r['min_cosine_vs_float32']:.4f}"
        print(f"{r['dtype']:10s} {r['threads']:3d} {r['p50']:8.0f} {r['p95']:8.0f} {cos:>10s}")
    for c in report["concurrency"]:
        print(f"under a {c['batch_sentences']}-sentence batch ({c['dtype']}, {c['threads']}"
              f" threads, batch_size {c['batch_size']}, preempt={c['preempt']}):"
              f" idle p50/p95 {c['idle']['p50']:.0f}/{c['idle']['p95']:.0f} ms,"
              f" under batch {c['under_batch']['p50']:.0f}/{c['under_batch']['p95']:.0f} ms,"
              f" p50 ratio {c['p50_ratio']}, p95 ratio {c['p95_ratio']} (target <= 1.5),"
              f" batch {c['batch_ms']['p50'] / 1000:.1f} s")
    return 0
