"""``python -m omoide_device_stackchan.simulator`` talks to a server and saves the reply."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from omoide.audio import read_wav, write_wav
from omoide_device_stackchan.testing import LiveServer, speech_like


async def test_simulator_command_sends_a_wav_and_saves_the_reply(server: LiveServer,
                                                                 tmp_path: Path) -> None:
    wav = tmp_path / "hello.wav"
    wav.write_bytes(write_wav(speech_like(0.5)))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "omoide_device_stackchan.simulator", "--url", server.url,
        "--wav", str(wav), "--mode", "manual", "--speed", "4", "--out",
        str(tmp_path / "reply"), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "robot [happy]: はい、元気です。あなたは？" in out.decode()
    reply = read_wav((tmp_path / "reply-1.wav").read_bytes())
    assert reply.sample_rate == 24000 and reply.duration_s > 0.2


async def test_simulator_command_reports_an_unpaired_robot(paired_server: LiveServer) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "omoide_device_stackchan.simulator", "--url",
        paired_server.url, "--text", "こんにちは", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert "omoide devices pair --code" in out.decode()
