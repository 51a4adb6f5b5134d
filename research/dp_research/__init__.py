"""dp_research: the AdsBPC paper's tables reproduced against its baselines (docs/results.md).

Not part of the product: ``dp_platform`` never imports this package. It plugs its one command,
``dp-platform evaluate``, into the platform's command line through the ``dp_platform.commands``
entry point (research/pyproject.toml).

==========================  ===============================================================
the paper's baselines       ``baselines/`` (IPA, BIN, Stream, UMM, MMBPC; docs/baselines.md)
experiments and reports     ``evaluation/`` (metrics, sweeps, ablations; docs/results.md)
the command                 ``commands/evaluate.py`` (``dp-platform evaluate``)
==========================  ===============================================================

Everything here evaluates on synthetic or public data with seeded noise: it is not a release.
"""
