"""Benchmarks: ``omoide bench <name>``; each module exposes ``register(sub)``."""
