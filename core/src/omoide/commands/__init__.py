"""Subcommands of ``omoide``; each module exposes ``register(sub)``."""
