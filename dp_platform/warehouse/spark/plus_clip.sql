-- AdsBPC+ clipping with the individual filter for one day (DuckDB twin: ../plus_clip.sql, where
-- the rule is explained; privacy/filter.py is the NumPy twin). Parameters: bound
-- r = :whole + :fraction, :two_var = 2σ², :cap the filter's budget, :residual.
-- The rows are the day's entries of the released vector (view cell_rows: its weights on the
-- campaign's publishers, or its cells — cell_rows.sql; what is not released, a key without a
-- position in view cell_positions, has weight 0 for the norm).
-- The runner checkpoints the CACHE views, so the spend rows and the vector come from one
-- evaluation. The partition (campaign, :day) of plus_user_spend was emptied by the store.
CACHE TABLE plus_conversions AS
WITH rows AS (
    SELECT
        r.user_key,
        r.user_rank,
        r.cell_key,
        sum(CASE WHEN cp.cell_key IS NULL THEN 0.0D ELSE r.weight END) AS w
    FROM cell_rows AS r
    LEFT JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
    WHERE r.user_rank <= :whole
    GROUP BY r.user_key, r.user_rank, r.cell_key
),
running AS (
    SELECT
        *,
        sum(w) OVER (
            PARTITION BY user_key, cell_key ORDER BY user_rank
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS before
    FROM rows
),
per_conversion AS (
    SELECT user_key, user_rank, sum(w * w) AS a, sum(coalesce(before, 0.0D) * w) AS b
    FROM running
    GROUP BY user_key, user_rank
)
SELECT
    *,
    coalesce(
        sum(a + 2 * b) OVER (
            PARTITION BY user_key ORDER BY user_rank
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ),
        0.0D
    ) AS q
FROM per_conversion;

-- Spends of the committed earlier days (days run in order: every day before :day is committed).
CACHE TABLE plus_spent AS
SELECT user_key, max_by(spend, day) AS spend
FROM plus_user_spend
WHERE campaign = :campaign AND day < :day
GROUP BY user_key;

CACHE TABLE plus_kept AS
WITH allowed AS (
    SELECT
        c.*,
        CASE
            WHEN :cap - coalesce(s.spend, 0.0D) > :residual * :cap
                THEN :two_var * (:cap - coalesce(s.spend, 0.0D))
            ELSE 0.0D
        END AS room
    FROM plus_conversions AS c
    LEFT JOIN plus_spent AS s ON s.user_key = c.user_key
)
SELECT
    user_key,
    user_rank,
    least(
        CASE WHEN user_rank < :whole THEN 1.0D ELSE :fraction END,
        CASE
            WHEN a = 0 OR q + a + 2 * b <= room THEN 1.0D
            WHEN room - q <= 0 THEN 0.0D
            ELSE least(1.0D, (room - q) / (b + sqrt(b * b + a * (room - q))))
        END
    ) AS f
FROM allowed;

-- What is released: per (user, vector position) the kept weight.
CACHE TABLE plus_user_rows AS
SELECT r.user_key, cp.position, sum(r.weight * k.f) AS value
FROM cell_rows AS r
JOIN plus_kept AS k ON k.user_key = r.user_key AND k.user_rank = r.user_rank
JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
WHERE k.f > 0
GROUP BY r.user_key, cp.position;

-- The spend is charged from exactly those released rows: cost = ‖c̄_u‖₂² / (2σ²).
INSERT INTO plus_user_spend
WITH costs AS (
    SELECT user_key, sum(value * value) / :two_var AS cost
    FROM plus_user_rows
    GROUP BY user_key
    HAVING sum(value * value) > 0
)
SELECT c.user_key, c.cost, coalesce(s.spend, 0.0D) + c.cost, :campaign, :day
FROM costs AS c
LEFT JOIN plus_spent AS s ON s.user_key = c.user_key;

SELECT position, sum(value) AS value
FROM plus_user_rows
GROUP BY position
ORDER BY position;
