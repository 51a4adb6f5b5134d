"""A minimal progress bar on stderr (full runs take minutes; say where they are).

Draws in place on a terminal, prints nothing otherwise (CI logs and ``--json`` pipes stay clean).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``with Progress(total, label) as bar: bar.advance(note)``."""

    def __init__(
        self, total: int, label: str, *, stream: TextIO | None = None, enabled: bool | None = None
    ) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.done = 0
        self.started = time.perf_counter()

    def __enter__(self) -> Progress:
        self._draw("")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()

    def advance(self, note: str = "") -> None:
        self.done += 1
        self._draw(note)

    def _draw(self, note: str) -> None:
        if not self.enabled:
            return
        width = 24
        filled = round(width * self.done / self.total)
        elapsed = time.perf_counter() - self.started
        bar = "#" * filled + "-" * (width - filled)
        line = f"\r{self.label} [{bar}] {self.done}/{self.total} {elapsed:6.1f}s {note}"
        self.stream.write(line[:120].ljust(120))
        self.stream.flush()
