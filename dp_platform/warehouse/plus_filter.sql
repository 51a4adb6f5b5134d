-- AdsBPC+ clipping with the individual filter for one day, for any strategy row (the NumPy
-- twins: privacy/filter.py for the diagonal strategy C = I, evaluation/plus_data.RowFilter for a
-- correlated one; the rule: docs/privacy.md "AdsBPC+: the individual filter").
-- Parameters: bound r = $whole + $fraction, $two_var = 2σ², $cap = the filter's budget; a
-- remaining budget below $residual·cap counts as spent (filter.remaining). The strategy row
-- (warehouse/base.py StrategyRow): $ctt = C_tt, $past_days with $past_coefs = C_tj of the
-- earlier days (zeros left out), and $carry = whether later rows read this day's kept values.
-- The diagonal strategy is the row C_tt = 1 with no earlier days and no carry.
--
-- Each user's conversions of the day in (ts, conversion_id) order (user_rank), with w a
-- conversion's entries of the released vector (cell_rows: its weights on the campaign's
-- publishers, or its cells — docs/algorithm.md#cells; what is not released has weight 0 for
-- the norm). Day t's row of user u is α·(P_u + C_tt·k_u): P_u = Σ_{j<t} C_tj k_{u,j}, their
-- earlier days' kept values (plus_user_values), and k_u the day's kept conversions. Per
-- conversion, with B the sum of the user's earlier conversions of the day: a = C_tt²‖w‖²,
-- b = C_tt⟨P_u + C_tt·B, w⟩ and q = ‖P_u + C_tt·B‖² (all before any cut; C ≥ 0, so a
-- conversion never lowers the norm). Kept fraction f = min(count part, budget part): count part
-- 1 below rank ⌊r⌋, r − ⌊r⌋ at it; budget part the largest f with q + 2fb + f²a ≤ room =
-- 2σ²(cap − s_u), s_u the user's spend before this day, as x/(b + √(b² + a·x)), x = room − q
-- (no cancellation). Once a conversion is cut, every later one has f = 0. If ‖P_u‖² alone is
-- above the room, nothing of the day is kept and the row is scaled by α = √(room/‖P_u‖²): the
-- user's spend reaches the cap.
CREATE OR REPLACE TEMP TABLE plus_past AS
WITH coefficients AS (
    SELECT
        unnest(CAST($past_days AS DATE[])) AS day,
        unnest(CAST($past_coefs AS DOUBLE[])) AS coef
)
SELECT v.user_key, v.position, sum(c.coef * v.value) AS value
FROM plus_user_values AS v
JOIN coefficients AS c ON c.day = v.day
WHERE v.campaign = $campaign
GROUP BY v.user_key, v.position;

-- Spends of the committed earlier days (days run in order: every day before $day is committed).
CREATE OR REPLACE TEMP TABLE plus_spent AS
SELECT user_key, arg_max(spend, day) AS spend
FROM plus_user_spend
WHERE campaign = $campaign AND day < $day
GROUP BY user_key;

CREATE OR REPLACE TEMP TABLE plus_room AS
WITH users AS (
    SELECT user_key FROM plus_past
    UNION
    SELECT user_key FROM cell_rows($campaign, $day, $day)
),
norms AS (
    SELECT user_key, sum(value * value) AS past FROM plus_past GROUP BY user_key
)
SELECT
    u.user_key,
    coalesce(n.past, 0.0) AS past,
    CASE
        WHEN $cap - coalesce(s.spend, 0.0) > $residual * $cap
            THEN $two_var * ($cap - coalesce(s.spend, 0.0))
        ELSE 0.0
    END AS room
FROM users AS u
LEFT JOIN norms AS n ON n.user_key = u.user_key
LEFT JOIN plus_spent AS s ON s.user_key = u.user_key;

CREATE OR REPLACE TEMP TABLE plus_conversions AS
WITH rows AS (
    SELECT
        r.user_key,
        r.user_rank,
        r.cell_key,
        any_value(cp.position) AS position,
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
    SELECT
        ru.user_key,
        ru.user_rank,
        $ctt * $ctt * sum(ru.w * ru.w) AS a,
        $ctt * sum(ru.w * (coalesce(p.value, 0.0) + $ctt * coalesce(ru.before, 0.0))) AS b
    FROM running AS ru
    LEFT JOIN plus_past AS p ON p.user_key = ru.user_key AND p.position = ru.position
    GROUP BY ru.user_key, ru.user_rank
)
SELECT
    c.*,
    m.past + coalesce(
        sum(c.a + 2 * c.b) OVER (
            PARTITION BY c.user_key ORDER BY c.user_rank
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ),
        0.0
    ) AS q,
    m.room
FROM per_conversion AS c
JOIN plus_room AS m ON m.user_key = c.user_key;

CREATE OR REPLACE TEMP TABLE plus_kept AS
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
FROM plus_conversions;

-- The day's kept values per (user, vector position): what later rows carry through C (kept
-- only when $carry: the diagonal strategy's later rows never read them).
CREATE OR REPLACE TEMP TABLE plus_today AS
SELECT r.user_key, cp.position, sum(r.weight * k.f) AS value
FROM cell_rows($campaign, $day, $day) AS r
JOIN plus_kept AS k ON k.user_key = r.user_key AND k.user_rank = r.user_rank
JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
WHERE k.f > 0
GROUP BY r.user_key, cp.position;

INSERT INTO plus_user_values
SELECT $campaign, CAST($day AS DATE), user_key, position, value
FROM plus_today
WHERE $carry AND value > 0;

-- What is released: per (user, position) α·(P_u + C_tt·k_u).
CREATE OR REPLACE TEMP TABLE plus_user_rows AS
WITH scaled AS (
    SELECT user_key, CASE WHEN past > room THEN sqrt(room / past) ELSE 1.0 END AS alpha
    FROM plus_room
)
SELECT
    coalesce(t.user_key, p.user_key) AS user_key,
    coalesce(t.position, p.position) AS position,
    s.alpha * (coalesce(p.value, 0.0) + $ctt * coalesce(t.value, 0.0)) AS value
FROM plus_today AS t
FULL OUTER JOIN plus_past AS p ON p.user_key = t.user_key AND p.position = t.position
JOIN scaled AS s ON s.user_key = coalesce(t.user_key, p.user_key);

-- The spend is charged from exactly those released rows: cost = ‖row_u‖₂² / (2σ²).
INSERT INTO plus_user_spend
WITH costs AS (
    SELECT user_key, sum(value * value) / $two_var AS cost
    FROM plus_user_rows
    GROUP BY user_key
    HAVING sum(value * value) > 0
)
SELECT $campaign, CAST($day AS DATE), c.user_key, c.cost, coalesce(s.spend, 0.0) + c.cost
FROM costs AS c
LEFT JOIN plus_spent AS s ON s.user_key = c.user_key;

SELECT position, sum(value) AS value
FROM plus_user_rows
GROUP BY position
ORDER BY position;
