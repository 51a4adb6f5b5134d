"""The paper's baselines (IPA, BIN, Stream, UMM, MMBPC), pure NumPy/SciPy
(docs/baselines.md#mechanisms).

Each mechanism is a frozen dataclass of its parameters with

- ``clip(conversions, n_publishers, n_days)`` → the (P × n) bounded counts it may see,
- ``plan(workload)`` → a data-independent calibration with ``query_variances()``,
  ``zcdp_cost()`` and a streaming, vectorised ``release`` (``cached_plan(mechanism, workload)``
  memoises it across repeats).

Stream reads raw conversions (it clips per rung), so its plan's ``release`` takes them directly.
"""

from dp_research.baselines.bin import BIN
from dp_research.baselines.contributions import (
    Conversions,
    clip_global,
    clip_per_day,
    running_before,
    user_day_totals,
)
from dp_research.baselines.ipa import IPA
from dp_research.baselines.mmbpc import MMBPC
from dp_research.baselines.plan import LinearPlan, cached_plan, gaussian_sigma, gaussian_zcdp
from dp_research.baselines.stream import Stream, StreamPlan, StreamRelease
from dp_research.baselines.umm import UMM
from dp_research.baselines.workloads import Workload, prefix, prefix_weights, sliding

__all__ = [
    "BIN",
    "IPA",
    "MMBPC",
    "UMM",
    "Conversions",
    "LinearPlan",
    "Stream",
    "StreamPlan",
    "StreamRelease",
    "Workload",
    "cached_plan",
    "clip_global",
    "clip_per_day",
    "gaussian_sigma",
    "gaussian_zcdp",
    "prefix",
    "prefix_weights",
    "running_before",
    "sliding",
    "user_day_totals",
]
