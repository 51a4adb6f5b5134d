"""The commands this package adds to ``dp-platform`` (entry-point group ``dp_platform.commands``).

Each entry is (module with ``configure(parser)``, one-line help), the shape of
``dp_platform.cli.COMMANDS``: loading it imports only this module, so ``dp-platform --help`` stays
free of NumPy and SciPy.
"""

from __future__ import annotations

EVALUATE: tuple[str, str] = (
    "dp_research.commands.evaluate",
    "compare AdsBPC with the paper's baselines on the paper's datasets",
)
"""``dp-platform evaluate`` (research/pyproject.toml declares it)."""
