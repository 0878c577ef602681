"""Load model weights, and run the first inference, on a thread of their own.

Measured on our CPUs (torch 2.13 with oneDNN/AMX, transformers 4.57): the first OS
thread that runs inference in the process stays many times slower than any other
thread (Qwen3-Embedding-0.6B shape, bf16, 2 threads: a 40-token query took 1.7-11 s
on that thread and 0.15-0.35 s on the others; a 16-sentence batch 11.5 s against
0.8 s). So each plugin loads its weights and runs one warm-up inference on a
short-lived thread, and real work runs on the component's worker threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


async def load_on_own_thread(load: Callable[[], T]) -> T:
    """Run ``load`` on a new thread that ends when it returns."""
    executor = ThreadPoolExecutor(1, thread_name_prefix="omoide-load")
    try:
        return await asyncio.get_running_loop().run_in_executor(executor, load)
    finally:
        executor.shutdown(wait=False)
