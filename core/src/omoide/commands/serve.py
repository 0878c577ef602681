"""``omoide serve --config FILE [--host H] [--port P]``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from omoide.commands._common import load_or_exit
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
    from omoide.plugins import build_registry
    from omoide.server.app import create_app

    settings = load_or_exit(args.config)
    if args.accept_data_loss:
        settings = accepting_data_loss(settings)
    registry = build_registry(wanted_components(settings.envelope))
    fatal: list[str] = []
    server_box: list[uvicorn.Server] = []

    def on_fatal(message: str) -> None:
        fatal.append(message)
        if server_box:
            server_box[0].should_exit = True

    app = create_app(settings, registry, on_fatal=on_fatal)
    config = uvicorn.Config(app, host=args.host or settings.server.host,
                            port=args.port or settings.server.port, log_level="info",
                            ws_max_size=1 << 20)
    server = uvicorn.Server(config)
    server_box.append(server)
    server.run()
    if fatal:
        print("\nomoide could not start:\n" + "\n".join(fatal), file=sys.stderr)
        return 1
    return 0


def accepting_data_loss(settings: Settings) -> Settings:
    """``settings`` with ``memory.accept_data_loss`` on."""
    memory = settings.memory.model_copy(update={"accept_data_loss": True})
    return replace(settings, envelope=settings.envelope.model_copy(update={"memory": memory}))
