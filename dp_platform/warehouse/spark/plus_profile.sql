-- AdsBPC+ profile histogram (DuckDB twin: ../plus_profile.sql): per user
-- T = Σ_d φ_d ‖clip_{r_d}(c_{u,d})‖₂² (+ :cross × the cross-day term) over the days :days
-- (r_d = :whole[d] + :fraction[d], over the released vector's entries: view cell_rows of the
-- days' range, cell_positions), then users per public log bin (low = :low, ratio e^:step, :bins
-- bins). The four lists are zipped element by element (DuckDB's multi-list unnest). The norm is
-- the filter's (view gram_slots, :identity: as plus_filter.sql).
WITH params AS (
    SELECT inline(arrays_zip(:days, :whole, :fraction, :factor)) AS (day, whole, fraction, factor)
),
kept AS (
    SELECT
        r.user_key,
        r.day,
        cp.position,
        sum(r.weight * CASE WHEN r.user_rank < p.whole THEN 1.0D ELSE p.fraction END) AS value
    FROM cell_rows AS r
    JOIN params AS p ON p.day = r.day
    JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
    WHERE r.user_rank <= p.whole
    GROUP BY r.user_key, r.day, cp.position
),
kept_slots AS (
    SELECT user_key, day, position AS slot, 1.0D AS weight, value
    FROM kept
    WHERE :identity
    UNION ALL
    SELECT k.user_key, k.day, g.slot, any_value(g.weight) AS weight, sum(g.coef * k.value) AS value
    FROM kept AS k
    JOIN gram_slots AS g ON g.position = k.position
    WHERE NOT :identity
    GROUP BY k.user_key, k.day, g.slot
),
per_day AS (
    SELECT k.user_key, k.day, greatest(sum(k.weight * k.value * k.value), 0.0D) AS norm
    FROM kept_slots AS k
    GROUP BY k.user_key, k.day
),
weighted AS (
    SELECT d.user_key, sum(d.norm * p.factor) AS t
    FROM per_day AS d
    JOIN params AS p ON p.day = d.day
    GROUP BY d.user_key
),
-- a correlated strategy's cross-day term (adsbpc_plus_plan.profile_cross; as DuckDB's)
per_entry AS (
    SELECT user_key, any_value(weight) AS weight, sum(value) AS total, sum(value * value) AS squares
    FROM kept_slots
    WHERE :cross > 0
    GROUP BY user_key, slot
    HAVING count(*) > 1
),
cross_terms AS (
    SELECT user_key, sum(weight * (total * total - squares)) AS extra
    FROM per_entry
    GROUP BY user_key
),
profile AS (
    SELECT w.user_key, greatest(w.t + :cross * coalesce(x.extra, 0.0D), 0.0D) AS t
    FROM weighted AS w
    LEFT JOIN cross_terms AS x ON x.user_key = w.user_key
)
SELECT
    CAST(least(greatest(floor(ln(greatest(t, :low) / :low) / :step), 0), :bins - 1) AS INT)
        AS bin,
    count(*) AS users
FROM profile
WHERE t > 0
GROUP BY 1
ORDER BY 1;
