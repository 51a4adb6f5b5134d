-- AdsBPC+'s remainder of a day: X_t = Σ_u min(c_ut − k_ut, $excess_cap), what the day's filter
-- clipped off each user, capped at E (the NumPy twin: run_plus(excess_cap=E) in
-- research/dp_research/evaluation/plus_data.py). Run right after plus_filter.sql in the same
-- transaction: it reads that statement's plus_kept (the kept fraction f of each of a user's
-- conversions up to rank ⌊r⌋; a later conversion is not kept at all). c_ut − k_ut is in the
-- units of the released vector's sum: Σ over the user's conversions of (1 − f)·(the
-- conversion's weight on the released positions), so that the released total plus X_t
-- counts every conversion a user has up to E a day. One user moves X_t by at most E.
WITH mass AS (
    SELECT
        r.user_key,
        r.user_rank,
        sum(CASE WHEN cp.cell_key IS NULL THEN 0.0 ELSE r.weight END) AS mass
    FROM cell_rows($campaign, $day, $day) AS r
    LEFT JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
    GROUP BY r.user_key, r.user_rank
),
lost AS (
    SELECT m.user_key, sum((1.0 - coalesce(k.f, 0.0)) * m.mass) AS lost
    FROM mass AS m
    LEFT JOIN plus_kept AS k ON k.user_key = m.user_key AND k.user_rank = m.user_rank
    GROUP BY m.user_key
)
SELECT coalesce(sum(least(lost, $excess_cap)), 0.0) AS remainder
FROM lost
WHERE lost > 0;
