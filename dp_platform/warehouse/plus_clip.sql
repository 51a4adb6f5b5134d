-- AdsBPC+ clipping with the individual filter (privacy/filter.py, the NumPy twin) for one day.
-- Parameters: bound r = $whole + $fraction, $two_var = 2σ², $cap = the filter's budget; a
-- remaining budget below $residual·cap counts as spent (filter.remaining).
--
-- Each user's conversions of the day in (ts, conversion_id) order (user_rank). Per conversion,
-- with w its entries of the released vector (cell_rows: its weights on the campaign's
-- publishers, or its cells — docs/algorithm.md#cells; what is not released has weight 0 for
-- the norm), C the sum of the user's earlier conversions of the day, a = ‖w‖², b = ⟨C, w⟩,
-- q = ‖C‖² (all before any cut). Kept fraction f = min(count part, budget part): count part 1
-- below rank ⌊r⌋, r − ⌊r⌋ at it; budget part the largest f with q + 2fb + f²a ≤ 2σ²(cap − s_u),
-- s_u the user's spend before this day, as x/(b + √(b² + a·x)), x = room − q (no cancellation).
-- Once a conversion is cut, every later one has f = 0.
CREATE OR REPLACE TEMP TABLE plus_conversions AS
WITH rows AS (
    SELECT
        r.user_key,
        r.user_rank,
        r.cell_key,
        sum(CASE WHEN cp.cell_key IS NULL THEN 0.0 ELSE r.weight END) AS w
    FROM cell_rows($campaign, $day, $day) AS r
    LEFT JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
    WHERE r.user_rank <= $whole
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
    SELECT user_key, user_rank, sum(w * w) AS a, sum(coalesce(before, 0.0) * w) AS b
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
        0.0
    ) AS q
FROM per_conversion;

CREATE OR REPLACE TEMP TABLE plus_kept AS
WITH spent AS (
    SELECT user_key, arg_max(spend, day) AS spend
    FROM plus_user_spend
    WHERE campaign = $campaign AND day < $day
    GROUP BY user_key
),
allowed AS (
    SELECT
        c.*,
        CASE
            WHEN $cap - coalesce(s.spend, 0.0) > $residual * $cap
                THEN $two_var * ($cap - coalesce(s.spend, 0.0))
            ELSE 0.0
        END AS room
    FROM plus_conversions AS c
    LEFT JOIN spent AS s ON s.user_key = c.user_key
)
SELECT
    user_key,
    user_rank,
    least(
        CASE WHEN user_rank < $whole THEN 1.0 ELSE $fraction END,
        CASE
            WHEN a = 0 OR q + a + 2 * b <= room THEN 1.0
            WHEN room - q <= 0 THEN 0.0
            ELSE least(1.0, (room - q) / (b + sqrt(b * b + a * (room - q))))
        END
    ) AS f
FROM allowed;

-- What is released: per (user, vector position) the kept weight.
CREATE OR REPLACE TEMP TABLE plus_user_rows AS
SELECT r.user_key, cp.position, sum(r.weight * k.f) AS value
FROM cell_rows($campaign, $day, $day) AS r
JOIN plus_kept AS k ON k.user_key = r.user_key AND k.user_rank = r.user_rank
JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
WHERE k.f > 0
GROUP BY r.user_key, cp.position;

-- The spend is charged from exactly those released rows: cost = ‖c̄_u‖₂² / (2σ²).
INSERT INTO plus_user_spend
WITH costs AS (
    SELECT user_key, sum(value * value) / $two_var AS cost
    FROM plus_user_rows
    GROUP BY user_key
    HAVING sum(value * value) > 0
),
spent AS (
    SELECT user_key, arg_max(spend, day) AS spend
    FROM plus_user_spend
    WHERE campaign = $campaign AND day < $day
    GROUP BY user_key
)
SELECT $campaign, CAST($day AS DATE), c.user_key, c.cost, coalesce(s.spend, 0.0) + c.cost
FROM costs AS c
LEFT JOIN spent AS s ON s.user_key = c.user_key;

SELECT position, sum(value) AS value
FROM plus_user_rows
GROUP BY position
ORDER BY position;
