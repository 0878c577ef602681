"""omoide plugin `device_stackchan`: StackChan (xiaozhi protocol) OTA + WebSocket transport.

Also ships the device simulator (:mod:`omoide_device_stackchan.simulator`), which
speaks the same protocol from the robot's side, and the ``omoide devices`` command
(:mod:`omoide_device_stackchan.commands`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from omoide.api import hookimpl


@hookimpl
def register_devices(register: Callable[[Any], None]) -> None:
    from omoide_device_stackchan.device import StackChan
    register(StackChan)


@hookimpl
def register_commands(cli: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from omoide_device_stackchan.commands import register
    register(cli)
