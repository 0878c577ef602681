"""Announcements: omoide speaks to a person unprompted, or keeps it until their robot is back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter

from omoide.announcements import Announcement, AnnouncementQueue, Announcer
from omoide.components import Device, DeviceConfig, DeviceHost
from omoide.testing.doubles import FakeTTS
from omoide.types import Emotion


class SpeakingDevice(Device):
    """A device double that reaches the users in ``online`` and records what it said."""

    name = "speaking"

    def __init__(self, online: set[str], fails: bool = False) -> None:
        super().__init__(DeviceConfig())
        self.online = online
        self.fails = fails
        self.said: list[Announcement] = []

    def router(self, host: DeviceHost) -> APIRouter:
        return APIRouter()

    def reaches(self, user: str) -> bool:
        return user in self.online

    async def announce(self, user: str, announcement: Announcement) -> bool:
        if self.fails:
            return False
        self.said.append(announcement)
        return True


def _announcer(tmp_path: Path, device: Any) -> Announcer:
    return Announcer([device], FakeTTS(FakeTTS.Config()),
                     AnnouncementQueue(tmp_path / "announcements.json"))


async def test_a_connected_person_hears_it_now_in_sentences_with_audio(tmp_path: Path) -> None:
    device = SpeakingDevice({"alice"})
    outcome = await _announcer(tmp_path, device).announce(
        "alice", "3分のタイマーが終わったよ！お湯を止めてね。", Emotion.SURPRISED)
    assert outcome.status == "delivered"
    [said] = device.said
    assert [s for s, _ in said.sentences] == ["3分のタイマーが終わったよ！", "お湯を止めてね。"]
    assert all(audio is not None and audio.duration_s > 0 for _, audio in said.sentences)
    assert said.emotion is Emotion.SURPRISED


async def test_a_person_whose_robot_is_away_gets_it_when_it_is_back(tmp_path: Path) -> None:
    device = SpeakingDevice(set())
    announcer = _announcer(tmp_path, device)
    assert (await announcer.announce("alice", "時間だよ。")).status == "queued"
    assert device.said == []
    [waiting] = await announcer.take_pending("alice")
    assert waiting.text == "時間だよ。" and waiting.sentences[0][1] is not None
    assert await announcer.take_pending("alice") == []


async def test_a_failed_delivery_is_queued_not_lost(tmp_path: Path) -> None:
    announcer = _announcer(tmp_path, SpeakingDevice({"alice"}, fails=True))
    assert (await announcer.announce("alice", "時間だよ。")).status == "queued"
    assert [a.text for a in await announcer.queue.pending("alice")] == ["時間だよ。"]


async def test_queued_messages_survive_a_restart_and_stay_with_their_person(
        tmp_path: Path) -> None:
    first = _announcer(tmp_path, SpeakingDevice(set()))
    await first.announce("alice", "アリスへ。")
    await first.announce("bob", "ボブへ。")
    again = _announcer(tmp_path, SpeakingDevice(set()))
    assert [a.text for a in await again.take_pending("bob")] == ["ボブへ。"]
    assert [a.text for a in await again.take_pending("alice")] == ["アリスへ。"]


async def test_an_unreadable_queue_file_starts_empty_instead_of_failing(tmp_path: Path) -> None:
    (tmp_path / "announcements.json").write_text("{not json", encoding="utf-8")
    announcer = _announcer(tmp_path, SpeakingDevice(set()))
    assert await announcer.take_pending("alice") == []
    assert (await announcer.announce("alice", "やあ。")).status == "queued"


async def test_an_empty_message_is_dropped(tmp_path: Path) -> None:
    outcome = await _announcer(tmp_path, SpeakingDevice({"alice"})).announce("alice", "  ")
    assert outcome.status == "dropped"


async def test_devices_without_announcements_are_never_asked(tmp_path: Path) -> None:
    class Silent(Device):
        name = "silent"

        def router(self, host: DeviceHost) -> APIRouter:
            return APIRouter()

    announcer = Announcer([Silent(DeviceConfig())], None,
                          AnnouncementQueue(tmp_path / "a.json"))
    assert (await announcer.announce("alice", "やあ。")).status == "queued"
