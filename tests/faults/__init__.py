"""Fault-injection harness: random schedules of killed processes, invariants after each
(docs/faults.md)."""
