"""``omoide serve --config FILE [--host H] [--port P]``.

The server claims its data dir (one process at a time: a second server, or an
``omoide memory`` command working on the store, is told who holds it), publishes
its URL in ``<data_dir>/server.json`` once it listens (so ``omoide memory`` finds it)
and removes it when it stops. Logging goes through
:class:`omoide.server.log_safety.SafeFormatter`: no token and no control character
reaches a log line, including uvicorn's access log.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace

from omoide.commands._common import EXIT_FAILED, load_or_exit
from omoide.config import Settings


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("serve", help="run the server")
    parser.add_argument("--config", required=True, help="YAML config file")
    parser.add_argument("--host", help="override server.host")
    parser.add_argument("--port", type=int, help="override server.port")
    parser.add_argument("--accept-data-loss", action="store_true",
                        help="start even if memory data the data dir's manifest records is"
                        " missing or damaged (sets memory.accept_data_loss for this start)")
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from omoide.config import wanted_components
    from omoide.data_dir_owner import DataDirBusy, DataDirClaim
    from omoide.errors import OmoideError
    from omoide.plugins import build_registry
    from omoide.server.app import create_app
    from omoide.server.log_safety import uvicorn_log_config
    from omoide.server.postgres_tokens import token_store
    from omoide.server.runner import build_server

    settings = load_or_exit(args.config)
    if args.accept_data_loss:
        settings = accepting_data_loss(settings)
    try:
        claim = DataDirClaim.acquire(settings.data_dir, "omoide serve")
    except DataDirBusy as exc:
        print(f"omoide: {exc}", file=sys.stderr)
        if settings.envelope.database.url:
            print("omoide: several workers on one database each need their own"
                  " server.data_dir (e.g. {$env: OMOIDE_DATA_DIR})", file=sys.stderr)
        return EXIT_FAILED
    try:
        tokens = token_store(settings.data_dir, settings.envelope.database.url)
        try:
            made = tokens.ensure_admin_token()
        except OmoideError as exc:
            print(f"omoide could not start: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if made:
            where = ("the database" if settings.envelope.database.url
                     else f"{settings.data_dir}/auth/admin.token")
            print(f"omoide: created the admin token in {where} "
                  f"(print it with: omoide token show --config {args.config})",
                  file=sys.stderr)
        tokens.close()
        registry = build_registry(wanted_components(settings.envelope))
        fatal: list[str] = []
        server_box: list[uvicorn.Server] = []

        def on_fatal(message: str) -> None:
            fatal.append(message)
            if server_box:
                server_box[0].should_exit = True

        try:
            app = create_app(settings, registry, on_fatal=on_fatal)
        except OmoideError as exc:
            print(f"omoide could not start: {exc}", file=sys.stderr)
            return EXIT_FAILED
        root_level = logging.getLevelName(logging.getLogger().level)
        server = build_server(app, settings, claim, host=args.host or settings.server.host,
                              port=args.port or settings.server.port,
                              log_config=uvicorn_log_config("INFO", root_level=root_level))
        server_box.append(server)
        server.run()
    finally:
        claim.release()
    if fatal:
        print("\nomoide could not start:\n" + "\n".join(fatal), file=sys.stderr)
        return 1
    return 0


def accepting_data_loss(settings: Settings) -> Settings:
    """``settings`` with ``memory.accept_data_loss`` on."""
    memory = settings.memory.model_copy(update={"accept_data_loss": True})
    return replace(settings, envelope=settings.envelope.model_copy(update={"memory": memory}))
