-- AdsBPC+'s remainder of a day, as DuckDB's ../plus_remainder.sql: X_t = Σ_u min(c_ut − k_ut,
-- :excess_cap), read from plus_filter.sql's cached plus_kept (run before it is released) and
-- appended to plus_remainders tagged with the run (plus_spend_days' record of the day with
-- that run makes it count).
INSERT INTO plus_remainders
WITH mass AS (
    SELECT
        r.user_key,
        r.user_rank,
        sum(CASE WHEN cp.cell_key IS NULL THEN 0.0D ELSE r.weight END) AS mass
    FROM cell_rows AS r
    LEFT JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
    GROUP BY r.user_key, r.user_rank
),
lost AS (
    SELECT m.user_key, sum((1.0D - coalesce(k.f, 0.0D)) * m.mass) AS lost
    FROM mass AS m
    LEFT JOIN plus_kept AS k ON k.user_key = m.user_key AND k.user_rank = m.user_rank
    GROUP BY m.user_key
)
SELECT
    CAST(:excess_cap AS DOUBLE),
    coalesce(sum(least(lost, CAST(:excess_cap AS DOUBLE))), 0.0D),
    :campaign,
    :day,
    :run
FROM lost
WHERE lost > 0;
