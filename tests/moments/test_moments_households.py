"""A moment for a household's member reaches the robot the household shares, not only
the robot of the person it was paired to."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from omoide.api import Household
from omoide_device_stackchan.announce import StackChanAnnouncer


@dataclass
class _Service:
    connections: dict[str, Any] = field(default_factory=dict)
    config: Any = None
    host: Any = None


def _robot(paired_to: str, household: Household | None) -> Any:
    return SimpleNamespace(identity=SimpleNamespace(user=paired_to, device_id="aa:bb"),
                           _household=(lambda: household) if household else None,
                           _hello_done=True, stats=SimpleNamespace(closed_reason=None))


def test_a_shared_robot_reaches_every_member_of_its_household() -> None:
    service = _Service({"aa:bb": _robot("aki", Household(("aki", "ben"), "aki"))})
    announcer = StackChanAnnouncer(service)
    assert announcer.reaches("aki") and announcer.reaches("ben")
    assert not announcer.reaches("chie")


def test_a_robot_of_one_reaches_its_person_only() -> None:
    announcer = StackChanAnnouncer(_Service({"aa:bb": _robot("aki", None)}))
    assert announcer.reaches("aki") and not announcer.reaches("ben")
