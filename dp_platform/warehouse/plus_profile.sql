-- AdsBPC+ profile histogram (adsbpc_plus.py): per user T = Σ_d φ_d ‖clip_{r_d}(c_{u,d})‖₂² over
-- the days $days (count clip at r_d = $whole[d] + $fraction[d], over the released vector's
-- entries: cell_rows of $first..$last), then users per public log bin (low = $low, ratio
-- e^$step, $bins bins). Users with T = 0 are in no bin. Python receives the counts per bin only.
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
per_day AS (
    SELECT k.user_key, k.day, sum(k.value * k.value) AS norm
    FROM kept AS k
    GROUP BY k.user_key, k.day
),
profile AS (
    SELECT d.user_key, sum(d.norm * p.factor) AS t
    FROM per_day AS d
    JOIN params AS p ON p.day = d.day
    GROUP BY d.user_key
)
SELECT
    CAST(least(greatest(floor(ln(greatest(t, $low) / $low) / $step), 0), $bins - 1) AS INTEGER)
        AS bin,
    count(*) AS users
FROM profile
WHERE t > 0
GROUP BY bin
ORDER BY bin;
