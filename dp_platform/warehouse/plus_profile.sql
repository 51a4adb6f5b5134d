-- AdsBPC+ profile histogram (adsbpc_plus.py): per user T = Σ_d φ_d ‖clip_{r_d}(c_{u,d})‖² (+ the
-- cross-day term below) over the days $days (count clip at r_d = $whole[d] + $fraction[d], over
-- the released vector's entries: cell_rows of $first..$last), then users per public log bin
-- (low = $low, ratio e^$step, $bins bins). Users with T = 0 are in no bin. Python receives the
-- counts per bin only.
-- The norm is the one the filter charges (plus_filter.sql): ‖encode(x)‖² through the layout's
-- Gram (table gram_slots) — a residual strategy charges a user's conversions piled in one
-- publisher more than spread ones, and the profile is read to size what the filter will cut;
-- $identity: Σ x² itself, without the join. Either way each user is in at most one bin (the
-- histogram's sensitivity, 1, does not depend on the norm), and T ≤ Λ² still (a conversion's
-- encoded norm is ≤ 1, so a day's is ≤ r_d ≤ Λ).
WITH params AS (
    SELECT
        unnest(CAST($days AS DATE[])) AS day,
        unnest(CAST($whole AS INTEGER[])) AS whole,
        unnest(CAST($fraction AS DOUBLE[])) AS fraction,
        unnest(CAST($factor AS DOUBLE[])) AS factor
),
kept AS (
    SELECT
        r.user_key,
        r.day,
        cp.position,
        sum(r.weight * CASE WHEN r.user_rank < p.whole THEN 1.0 ELSE p.fraction END) AS value
    FROM cell_rows($campaign, $first, $last) AS r
    JOIN params AS p ON p.day = r.day
    JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
    WHERE r.user_rank <= p.whole
    GROUP BY r.user_key, r.day, cp.position
),
-- the kept entries in slot space (M·x, each slot's weight): the identity Gram keeps them as they are
kept_slots AS (
    SELECT user_key, day, position AS slot, 1.0 AS weight, value
    FROM kept
    WHERE $identity
    UNION ALL
    SELECT k.user_key, k.day, g.slot, any_value(g.weight) AS weight, sum(g.coef * k.value) AS value
    FROM kept AS k
    JOIN gram_slots AS g ON g.position = k.position
    WHERE NOT $identity
    GROUP BY k.user_key, k.day, g.slot
),
per_day AS (
    SELECT k.user_key, k.day, greatest(sum(k.weight * k.value * k.value), 0.0) AS norm
    FROM kept_slots AS k
    GROUP BY k.user_key, k.day
),
weighted AS (
    SELECT d.user_key, sum(d.norm * p.factor) AS t
    FROM per_day AS d
    JOIN params AS p ON p.day = d.day
    GROUP BY d.user_key
),
-- a correlated strategy's cross-day term (adsbpc_plus_plan.profile_cross): $cross times
-- ‖Σ_d kept_d‖² − Σ_d ‖kept_d‖², over slots the user reached on two or more of the days
per_entry AS (
    SELECT user_key, any_value(weight) AS weight, sum(value) AS total, sum(value * value) AS squares
    FROM kept_slots
    WHERE $cross > 0
    GROUP BY user_key, slot
    HAVING count(*) > 1
),
cross_terms AS (
    SELECT user_key, sum(weight * (total * total - squares)) AS extra
    FROM per_entry
    GROUP BY user_key
),
profile AS (
    SELECT w.user_key, greatest(w.t + $cross * coalesce(x.extra, 0.0), 0.0) AS t
    FROM weighted AS w
    LEFT JOIN cross_terms AS x ON x.user_key = w.user_key
)
SELECT
    CAST(least(greatest(floor(ln(greatest(t, $low) / $low) / $step), 0), $bins - 1) AS INTEGER)
        AS bin,
    count(*) AS users
FROM profile
WHERE t > 0
GROUP BY bin
ORDER BY bin;
