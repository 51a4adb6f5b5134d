"""Attribution rules beyond the warehouse's deterministic SQL: private_last_touch
(Agarwal et al.)."""
