"""Evaluation of AdsBPC against the paper's baselines (docs/results.md). Never imports dagster.

- :mod:`.metrics`, :mod:`.bounds` — error metrics and the non-private given-bounds helper;
- :mod:`.datasets`, :mod:`.prepared` — the four datasets and their one-sort rank tensors;
- :mod:`.adsbpc_runs`, :mod:`.methods` — one seeded repeat of every method (AdsBPC runs the
  real mechanism; the oracle is labelled non-private);
- :mod:`.scoring`, :mod:`.experiment` — repeats → table numbers, JSON;
- :mod:`.sweeps`, :mod:`.ablations` — Figures 1–2 and Tables XIII–XVII;
- :mod:`.paper`, :mod:`.markdown`, :mod:`.report` — the paper's numbers and the results page.

Everything here evaluates on synthetic or public data with seeded noise: it is not a release.
"""
