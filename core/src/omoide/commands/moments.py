"""``omoide moments ...``: what omoide will say first, to whom, and stopping it.

    omoide moments list   --config FILE [--user U] [--json]
    omoide moments cancel --config FILE --user U KEY [--every]
    omoide moments off    --config FILE --user U      (on: switch them back on)
    omoide moments quiet  --config FILE --user U SPAN (21:00-06:30; "default": the
                                                       config's quiet hours again)

While ``omoide serve`` runs on the config's data dir the commands call its HTTP API
(``/v1/moments``, with the data dir's admin token); otherwise they claim the data dir,
open the memory engine and the moments ledger themselves.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from omoide.commands._common import EXIT_FAILED, load_or_exit, report_failures

if TYPE_CHECKING:
    from omoide.config import Settings
    from omoide.data_dir_owner import RunningServer


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from omoide.commands.memory import user_id_argument

    parser = sub.add_parser("moments", help="what omoide will say first (plans, "
                            "birthdays, reminders): list, cancel, switch off or on")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, help_text in (("list", "moments to come and said lately, per person"),
                            ("cancel", "never say one moment (its KEY from list)"),
                            ("off", "never speak first to a person"),
                            ("on", "speak first to a person again"),
                            ("quiet", "a person's own quiet hours (HH:MM-HH:MM, or "
                             "'default' for the config's)")):
        c = actions.add_parser(name, help=help_text)
        c.add_argument("--config", required=True, help="config file (YAML)")
        c.add_argument("--user", required=name != "list", type=user_id_argument,
                       help="person id" + (" (default: everyone)" if name == "list" else ""))
        if name == "list":
            c.add_argument("--json", action="store_true", help="print JSON")
        if name == "cancel":
            c.add_argument("key", metavar="KEY")
            c.add_argument("--every", action="store_true", help="also every repetition "
                           "of it (a daily reminder, a birthday every year)")
        if name == "quiet":
            c.add_argument("span", metavar="SPAN", type=_span_argument)
        c.set_defaults(handler=_run)


class _Moments(Protocol):
    async def listing(self, user: str | None) -> list[dict[str, Any]]: ...

    async def cancel(self, user: str, key: str, every: bool) -> bool: ...

    async def switch(self, user: str, off: bool) -> None: ...

    async def quiet(self, user: str, span: str | None) -> dict[str, Any]: ...


def _span_argument(text: str) -> str | None:
    """``HH:MM-HH:MM`` (normalised), or None for ``default``."""
    from omoide.moments.quiet_hours import QuietHours

    if text.strip().lower() == "default":
        return None
    try:
        return str(QuietHours.parse(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _run(args: argparse.Namespace) -> int:
    settings = load_or_exit(args.config)
    return asyncio.run(report_failures(_work(settings, args)))


async def _work(settings: Settings, args: argparse.Namespace) -> int:
    async with _open(settings) as moments:
        if args.action == "list":
            people = await moments.listing(args.user)
            print(json.dumps(people, ensure_ascii=False, indent=1) if args.json
                  else _table(people))
            return 0
        if args.action == "cancel":
            if not await moments.cancel(args.user, args.key, args.every):
                print(f"{args.user} has no moment {args.key!r} to come", file=sys.stderr)
                return EXIT_FAILED
            print(f"cancelled {args.key}{' and every repetition' if args.every else ''}"
                  f" for {args.user}")
            return 0
        if args.action == "quiet":
            now = await moments.quiet(args.user, args.span)
            print(f"quiet hours for {args.user}: {now['quiet_hours']} "
                  f"({now['quiet_hours_from']})")
            return 0
        await moments.switch(args.user, args.action == "off")
        print(f"moments are {args.action} for {args.user}")
        return 0


def _table(people: list[dict[str, Any]]) -> str:
    lines = []
    for p in people:
        lines.append(f"{p['person']}: {'OFF' if p['off'] else 'on'}, quiet hours "
                     f"{p['quiet_hours']} ({p.get('quiet_hours_from', 'household')}), "
                     f"at most {p['max_per_day']} a day")
        for m in p["upcoming"]:
            lines.append(f"  {m['starts'][:16]} - {m['ends'][:16]}  {m['kind']:<10} "
                         f"{m['topic']}  {m['key']}{'  (now)' if m['open'] else ''}")
        for e in p["said"][:5]:
            lines.append(f"  {e['state']} {e['at'][:16]} {e['kind']}: {e['text']}")
    return "\n".join(lines) or "no one yet"


@asynccontextmanager
async def _open(settings: Settings) -> AsyncIterator[_Moments]:
    from omoide.data_dir_owner import find_server

    server = find_server(settings.data_dir)
    if server is not None:
        yield _Remote(settings, server)
        return
    async with _local(settings) as local:
        yield local


class _Remote:
    def __init__(self, settings: Settings, server: RunningServer) -> None:
        from omoide.server.tokens import TokenStore

        if not server.url:
            raise SystemExit(f"the server (pid {server.pid}) holding {settings.data_dir} "
                             "does not listen yet; try again in a moment")
        self.url = server.url
        self.headers = {"Authorization": f"Bearer {TokenStore(settings.data_dir).admin_token()}"}

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        import httpx

        async with httpx.AsyncClient(base_url=self.url, headers=self.headers,
                                     timeout=60) as http:
            r = await http.request(method, path, json=body)
        if r.status_code == 404:
            return None
        if r.status_code >= 400:
            raise SystemExit(f"the server answered {r.status_code}: {r.text}")
        return r.json()

    async def listing(self, user: str | None) -> list[dict[str, Any]]:
        if user is None:
            return list((await self._call("GET", "/v1/moments"))["people"])
        return [await self._call("GET", f"/v1/users/{quote(user, safe='')}/moments")]

    async def cancel(self, user: str, key: str, every: bool) -> bool:
        path = f"/v1/users/{quote(user, safe='')}/moments/{quote(key, safe='')}/cancel"
        return await self._call("POST", path + ("?every=true" if every else "")) is not None

    async def switch(self, user: str, off: bool) -> None:
        await self._call("PUT", f"/v1/users/{quote(user, safe='')}/moments/switch",
                         {"off": off})

    async def quiet(self, user: str, span: str | None) -> dict[str, Any]:
        return dict(await self._call(
            "PUT", f"/v1/users/{quote(user, safe='')}/moments/quiet_hours",
            {"quiet_hours": span}))


class _Local:
    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler

    async def listing(self, user: str | None) -> list[dict[str, Any]]:
        people = [user] if user else sorted(set(await self.scheduler.people()))
        return [await self.scheduler.listing(p) for p in people]

    async def cancel(self, user: str, key: str, every: bool) -> bool:
        return bool(await self.scheduler.cancel(user, key, "cli", every=every))

    async def switch(self, user: str, off: bool) -> None:
        await self.scheduler.switch_off(user, off)

    async def quiet(self, user: str, span: str | None) -> dict[str, Any]:
        await self.scheduler.set_quiet_hours(user, span)
        quiet, whose = await self.scheduler.quiet_hours(user)
        return {"quiet_hours": str(quiet), "quiet_hours_from": whose}


@asynccontextmanager
async def _local(settings: Settings) -> AsyncIterator[_Local]:
    from omoide.data_dir_owner import DataDirClaim
    from omoide.memory_client.local import LocalMemoryClient
    from omoide.moments.delivery import MomentScheduler
    from omoide.moments.ledgers import open_ledger
    from omoide.moments.planning import EngineMemories
    from omoide.moments.serving import LEDGER_FILE

    with DataDirClaim.acquire(settings.data_dir, "moments"):
        async with LocalMemoryClient.open(settings, ("embed", "store")) as client:
            engine = client.engine

            async def people() -> list[str]:
                return await engine.journal.users()

            ledger = open_ledger(settings.data_dir / LEDGER_FILE,
                                 settings.envelope.database.url)
            try:
                yield _Local(MomentScheduler(settings.envelope.moments, ledger,
                                             EngineMemories(engine), people,
                                             timezone=settings.assistant.timezone))
            finally:
                ledger.close()
