"""A Python script run under cProfile counting its main thread's CPU, between SIGUSR1s.

    python -m omoide_bench.profiled OUT.prof SCRIPT [ARGS...]

The bench starts ``omoide serve`` this way when ``OMOIDE_BENCH_PROFILE_DIR`` is set
(``omoide bench scale``): the profile is off until the first SIGUSR1 and off again at
the second, so a bench profiles its measured round only (not the start-up, the warm-up
or the catch-up after). The timer is the main thread's CPU time (``time.thread_time``),
not the wall clock: on a busy machine a wall-clock profile counts the waits for a core.
Work that a worker thread does (``asyncio.to_thread``) is not in it. The profile is
written when the script ends (SIGINT, or its own exit).
"""

from __future__ import annotations

import cProfile
import runpy
import signal
import sys
import time
from typing import Any


def main() -> None:
    out, script, *args = sys.argv[1:]
    profile = cProfile.Profile(time.thread_time)
    on = False

    def toggle(*_: Any) -> None:
        nonlocal on
        if on:
            profile.disable()
        else:
            profile.enable()
        on = not on

    signal.signal(signal.SIGUSR1, toggle)
    sys.argv = [script, *args]
    try:
        runpy.run_path(script, run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        if on:
            profile.disable()
        profile.dump_stats(out)


if __name__ == "__main__":
    main()
