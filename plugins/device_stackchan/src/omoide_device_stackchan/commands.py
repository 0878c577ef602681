"""``omoide devices pair|list|household|rename|revoke|migrate --config FILE``: which robot
belongs to whom.

Pairing binds a StackChan (its device id and the client id its firmware keeps) to a
household: the person paired, its default, whose memories it uses. ``omoide devices
household DEVICE --add bob --guest`` adds members and says who answers when no voice is
recognised (``--default PERSON``, or ``--guest``: no one's memory). An unpaired
robot that calls the OTA endpoint shows a six-digit activation code; ``omoide devices
pair --code 123456 --user hanako`` pairs it. A re-flashed robot (a new client id)
shows a code again: pairing that code re-pairs it (keeping its household when the
person is one of its members). Pairings live in the device plugin's data folder
(``<server.data_dir>/devices/<plugin>/``), or with ``database.url`` in the shared
database every worker reads, and a running server picks changes up at the robot's next
request. The console does the same through ``/v1/devices``.

The plugin adds the command through the ``register_commands`` hook (see the package's
``__init__``); the module stays cheap to import, for ``omoide --help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omoide_device_stackchan.pairing import Pairing, PairingStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``omoide devices`` and its actions to the command line."""
    parser = sub.add_parser("devices", help="pair, list, rename and revoke StackChan robots")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    pair = actions.add_parser("pair", help="bind a robot to a user")
    _config_arguments(pair)
    which = pair.add_mutually_exclusive_group(required=True)
    which.add_argument("device_id", nargs="?", help="the robot's device id (MAC address)")
    which.add_argument("--code", help="the activation code the robot shows")
    pair.add_argument("--user", required=True, help="user id whose memories the robot uses")
    pair.add_argument("--name", help="a display name for the robot")
    pair.set_defaults(handler=_pair)

    household = actions.add_parser(
        "household", help="show or change the people a robot serves and who answers "
                          "when no voice is recognised")
    _config_arguments(household)
    household.add_argument("device_id", help="the robot's device id (MAC address)")
    household.add_argument("--add", action="append", default=[], metavar="PERSON",
                           help="a person who joins (repeatable)")
    household.add_argument("--remove", action="append", default=[], metavar="PERSON",
                           help="a person who leaves (repeatable)")
    answer = household.add_mutually_exclusive_group()
    answer.add_argument("--default", metavar="PERSON",
                        help="who answers when no voice is recognised (joins if need be)")
    answer.add_argument("--guest", action="store_true",
                        help="a voice no one recognised is a guest: no one's memory")
    household.set_defaults(handler=_household)

    listing = actions.add_parser("list", help="paired robots and robots waiting to be paired")
    _config_arguments(listing)
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(handler=_list)

    rename = actions.add_parser("rename", help="give a paired robot a display name")
    _config_arguments(rename)
    rename.add_argument("device_id", help="the robot's device id (MAC address)")
    rename.add_argument("name", help="the new name ('' removes it)")
    rename.set_defaults(handler=_rename)

    revoke = actions.add_parser("revoke", help="refuse a robot from now on")
    _config_arguments(revoke)
    revoke.add_argument("device_id", help="the robot's device id (MAC address)")
    revoke.set_defaults(handler=_revoke)

    migrate = actions.add_parser(
        "migrate", help="copy the data folder's pairings and pending codes into the "
                        "shared database (idempotent)")
    _config_arguments(migrate)
    migrate.add_argument("--to", metavar="URL",
                         help="postgresql://... (default: the config's database.url)")
    migrate.set_defaults(handler=_migrate)


def _config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="YAML config file")
    parser.add_argument("--device", type=int, default=None,
                        help="index in the config's `devices:` list (default: the first "
                             "stackchan)")


def _store(args: argparse.Namespace) -> PairingStore:
    """The pairings the server of ``--config`` uses: its data folder's file, or the
    shared database's tables when the config names one (``database.url``)."""
    from omoide.api import config_database_url, device_data_dir
    from omoide_device_stackchan.service import pairing_store_for

    return pairing_store_for(device_data_dir(args.config, "stackchan", args.device),
                             None, config_database_url(args.config))


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "-"


def _pair(args: argparse.Namespace) -> int:
    from omoide_device_stackchan.pairing import PairingError

    store = _store(args)
    before = {p.device_id: p for p in store.pairings()}
    try:
        if args.code:
            pairing = store.pair_by_code(args.code, args.user, args.name)
        else:
            pairing = store.pair(args.device_id, args.user, name=args.name)
    except PairingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    old = before.get(pairing.device_id)
    if old is not None and old.active:
        print(f"re-paired {pairing.device_id} (was user {old.user}"
              f"{', another client id' if old.client_id != pairing.client_id else ''}); "
              "tokens issued before now no longer work")
        if old.serial_number and pairing.serial_number \
                and old.serial_number != pairing.serial_number:
            print("warning: its serial number differs from the one recorded before",
                  file=sys.stderr)
    print(f"paired {pairing.device_id} with user {pairing.user}; the robot connects at its "
          "next start (or within a minute while it shows the code)")
    return 0


def _household_text(pairing: Pairing) -> str:
    """``alice, bob (default alice)`` or ``alice, bob (guests)``."""
    household = pairing.household
    default = household.default_person
    return ", ".join(household.members) + (f" (default {default})" if default
                                           else " (guests)")


def _household(args: argparse.Namespace) -> int:
    from omoide_device_stackchan.pairing import KEEP_DEFAULT, PairingError

    store = _store(args)
    default = None if args.guest else args.default or KEEP_DEFAULT
    try:
        if args.add or args.remove or args.guest or args.default:
            pairing = store.update_household(args.device_id, add=tuple(args.add),
                                             remove=tuple(args.remove), default=default)
        else:
            found = store.get(args.device_id)
            if found is None:
                print(f"error: device {args.device_id!r} is not paired", file=sys.stderr)
                return 1
            pairing = found
    except PairingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    household = pairing.household
    print(f"{pairing.device_id} serves {', '.join(household.members)}")
    print("a voice no one recognised: " + (
        f"{household.default_person} (their memory)" if household.default_person
        else "a guest (no one's memory is read or written)"))
    return 0


def _list(args: argparse.Namespace) -> int:
    store = _store(args)
    pairings, pending = store.pairings(), store.pending()
    if args.json:
        print(json.dumps({"paired": [{**vars(p), "household": {
                              "members": list(p.household.members),
                              "default_person": p.household.default_person}}
                                     for p in pairings],
                          "pending": [vars(p) for p in pending]}, indent=2,
                         ensure_ascii=False))
        return 0
    if not pairings and not pending:
        print("no robots paired or waiting")
        return 0
    rows = [("DEVICE", "NAME", "HOUSEHOLD", "STATE", "PAIRED", "LAST SEEN", "FIRMWARE",
             "SERIAL")]
    for p in pairings:
        rows.append((p.device_id, p.name or "-", _household_text(p),
                     "active" if p.active else "revoked",
                     _when(p.paired_at), _when(p.last_seen),
                     f"{p.board or '?'} {p.firmware_version or '?'}", p.serial_number or "-"))
    for w in pending:
        state = f"waiting, code {w.code}" + (f" (re-pair of {w.repair_of})"
                                             if w.repair_of else "")
        rows.append((w.device_id, "-", "-", state, _when(w.requested_at), "-",
                     f"{w.board or '?'} {w.firmware_version or '?'}", w.serial_number or "-"))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(widths[c]) for c, cell in enumerate(r)).rstrip())
    return 0


def _rename(args: argparse.Namespace) -> int:
    from omoide_device_stackchan.pairing import PairingError

    try:
        pairing = _store(args).rename(args.device_id, args.name)
    except PairingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{pairing.device_id} is now called {pairing.name or '(no name)'}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from omoide_device_stackchan.pairing import PairingError

    try:
        pairing = _store(args).revoke(args.device_id)
    except PairingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"revoked {pairing.device_id} (was user {pairing.user}); a running server "
          "disconnects it within a second and refuses it from now on")
    return 0


def _migrate(args: argparse.Namespace) -> int:
    """``omoide devices migrate``: the pairings of the data folder (``pairings.json``)
    into the database, so every worker knows the robots one server paired."""
    from omoide.api import config_database_url, device_data_dir
    from omoide_device_stackchan.pairing import PairingStore
    from omoide_device_stackchan.shared_pairing import PostgresPairingStore

    folder = device_data_dir(args.config, "stackchan", args.device)
    url = args.to or config_database_url(args.config)
    if not url or not str(url).startswith(("postgresql://", "postgres://")):
        print("error: name the PostgreSQL database: --to postgresql://... or database.url "
              "in the config", file=sys.stderr)
        return 1
    shared = PostgresPairingStore(str(url), folder.name, pool_size=1)
    try:
        pairings, codes = shared.import_file(PairingStore(folder))
    finally:
        shared.close()
    print(f"{folder / 'pairings.json'} -> PostgreSQL: {pairings} pairings and {codes} "
          "pending codes copied now (those already there are kept)")
    return 0
