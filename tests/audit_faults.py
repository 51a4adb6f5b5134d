"""Deliberate privacy bugs in a copy of the pipeline, for the audit to catch (tests only).

Each fault is a context manager patching this process's pipeline — the SQL text the DuckDB
warehouse runs (``warehouse.runner.load_sql``) or the sampler a run draws from — and checks that
its patch really changed something, so a test cannot pass on a fault that was never injected.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from dp_platform.audit.options import AuditSamplers
from dp_platform.privacy.noise import SeededIntegerNoise, SeededNoise
from dp_platform.privacy.noise_check import Draw
from dp_platform.warehouse import runner

Edits = dict[str, list[tuple[str, str]]]
"""SQL file name → (text, replacement) pairs, each of which must occur in the file."""

CLIP_FILES = ("clip", "clip_cells")

SKIP_CLIPPING: Edits = {
    name: [
        ("CASE WHEN r.user_rank < $whole THEN 1.0 ELSE $fraction END", "1.0"),
        ("WHERE r.user_rank <= $whole", "WHERE TRUE"),
    ]
    for name in CLIP_FILES
}
"""Every conversion kept, whatever the bound: the release's sensitivity unbounded."""

DOUBLE_CLIP: Edits = {name: [("$whole", "(2 * $whole)")] for name in CLIP_FILES}
"""Each user keeps 2·⌊r⌋ + the fraction: sensitivity understated 2× (noise sized for r)."""

IDS_ACROSS_USERS: Edits = {
    "ingest_duplicate_candidates": [("hash(user_key, id)", "hash(id)")],
    "ingest_duplicate_candidates_earlier": [("hash(user_key, id)", "hash(id)")],
    "ingest_duplicates": [
        ("PARTITION BY c.user_key, c.id", "PARTITION BY c.id"),
        ("ON e.user_key = c.user_key AND e.id = c.id", "ON e.id = c.id"),
    ],
}
"""Duplicates found by event id alone, as before ingest keyed events on (user, id): another
user's event reusing an id is dropped as a duplicate of the first copy."""


@contextmanager
def sql_fault(monkeypatch: pytest.MonkeyPatch, edits: Edits) -> Iterator[None]:
    original = runner.load_sql

    def patched(name: str) -> str:
        text = original(name)
        for old, new in edits.get(name, []):
            if old not in text:
                raise AssertionError(f"{name}.sql no longer contains {old!r}: update the fault")
            text = text.replace(old, new)
        return text

    for name in edits:  # fail now, not in the middle of a run, if a file changed
        patched(name)
    monkeypatch.setattr(runner, "load_sql", patched)
    yield


class HalvedNoise(SeededNoise):
    """Gaussian noise at half the σ the mechanism asked for (after OpenDP's check): a sampler
    bug the declaration cannot see."""

    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return super()._gaussian(vector, dataclasses.replace(draw, scale=draw.scale / 2))


def seeded_samplers(seed: int, real: Callable[[int], SeededNoise] = SeededNoise) -> AuditSamplers:
    return AuditSamplers(real=real(seed), integer=SeededIntegerNoise(seed + 1))
