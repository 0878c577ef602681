"""The command-line front ends ``omoide bench`` and ``omoide eval``; each module exposes
``register(sub)``, called by :func:`omoide_bench.plugin.register_commands`."""
