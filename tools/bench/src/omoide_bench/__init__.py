"""omoide's tooling, not its runtime: ``omoide bench NAME`` and ``omoide eval``.

A separate distribution (``omoide-bench``) so that a production install carries no
benchmark code or data. It adds its commands through the ``register_commands`` hook
(:mod:`omoide_bench.plugin`).

- :mod:`omoide_bench.benches`: one module per ``omoide bench NAME`` (each exposes
  ``register(sub)``), with the phrase and reply sets in ``benches/data/``;
- :mod:`omoide_bench.eval` and :mod:`omoide_bench.eval_data`: scoring the read engines
  on data sets, and checking those data sets first;
- :mod:`omoide_bench.commands`: the two command-line front ends.

It may import the core (public API first, internals where the API has no name yet) and
the plugins a bench measures, always inside the function that needs them.
"""
