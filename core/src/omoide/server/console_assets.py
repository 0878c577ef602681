"""The console's static files: public (they hold no data), served from ``static/``.

Every path here is answered without a token (see :data:`omoide.server.auth.PUBLIC_ROUTES`);
what the page shows comes from routes that need one.
"""

from __future__ import annotations

CONSOLE_ASSETS: dict[str, tuple[str, str]] = {
    "/console/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/console/gantt.js": ("gantt.js", "text/javascript; charset=utf-8"),
    "/console/app.css": ("app.css", "text/css; charset=utf-8"),
    "/console/icon.svg": ("icon.svg", "image/svg+xml"),
}
"""URL path -> (file in ``omoide/server/static/``, content type)."""
