-- AdsBPC+ clipping with the individual filter for one day, for any strategy row and any cell
-- strategy (the NumPy twins: privacy/filter.py — budget_fraction, and filter_user_day for one
-- user's day under a cell strategy's Gram; evaluation/plus_data.RowFilter for a correlated row
-- over publishers; the rule: docs/privacy.md "AdsBPC+: the individual filter").
-- Parameters: bound r = $whole + $fraction, $two_var = 2σ², $cap = the filter's budget; a
-- remaining budget below $residual·cap counts as spent (filter.remaining). The strategy row
-- (warehouse/base.py StrategyRow): $ctt = C_tt, $past_days with $past_coefs = C_tj of the
-- earlier days (zeros left out), and $carry = whether later rows read this day's kept values.
-- The diagonal strategy is the row C_tt = 1 with no earlier days and no carry.
--
-- The norm (dp_platform/cell_strategy.py Gram): what the Gaussian is added to is encode(x) of
-- the released vector x, and ‖encode(x)‖² = Σ_s g_s·(Σ_{k: slot k = s} coef_k·x[position_k])²,
-- table gram_slots (position, slot, coef, weight = g of the slot; public, from the registered
-- layout). Every inner product below is ⟨x, y⟩_G = Σ_s g_s·(Mx)_s·(My)_s, M the map from
-- positions to slots. $identity: the Gram is the identity (independent cells: slot = position,
-- coef = g = 1; gram_slots is then empty and never read) — the sums are then written without
-- the map, and give bit for bit the plain Σ x·y of the diagonal norm. A weight may be negative
-- (the sum never is): a, q and the charge are clamped at 0 against rounding.
--
-- Each user's conversions of the day in (ts, conversion_id) order (user_rank), with w a
-- conversion's entries of the released vector (cell_rows: its weights on the campaign's
-- publishers, or its cells — docs/algorithm.md#cells; what is not released has weight 0 for
-- the norm). Day t's row of user u is α·(P_u + C_tt·k_u): P_u = Σ_{j<t} C_tj k_{u,j}, their
-- earlier days' kept values (plus_user_values), and k_u the day's kept conversions. Per
-- conversion, with B the sum of the user's earlier conversions of the day: a = C_tt²‖w‖²,
-- b = C_tt⟨P_u + C_tt·B, w⟩ and q = ‖P_u + C_tt·B‖² (all before any cut). Kept fraction
-- f = min(count part, budget part): count part 1 below rank ⌊r⌋, r − ⌊r⌋ at it; budget part the
-- largest f with q + 2fb + f²a ≤ room = 2σ²(cap − s_u), s_u the user's spend before this day:
-- x/(b + √(b² + a·x)), x = room − q, for b ≥ 0 and (√(b² + a·x) − b)/a for b < 0 (no
-- cancellation either way; b < 0 only under a correlated Gram: a conversion may then lower the
-- norm). Once q has passed the room — a conversion was cut, or ‖P_u‖² alone is above it — every
-- later conversion has f = 0 (q assumes the earlier ones whole; with C ≥ 0 and the identity
-- Gram q never falls, so this only matters under a correlated Gram). If ‖P_u‖² alone is above
-- the room, nothing of the day is kept and the row is scaled by α = √(room/‖P_u‖²): the
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

-- P_u in slot space (M·P_u, with each slot's weight): the past's part of every inner product.
CREATE OR REPLACE TEMP TABLE plus_past_slots AS
SELECT user_key, position AS slot, 1.0 AS weight, value
FROM plus_past
WHERE $identity
UNION ALL
SELECT p.user_key, g.slot, any_value(g.weight) AS weight, sum(g.coef * p.value) AS value
FROM plus_past AS p
JOIN gram_slots AS g ON g.position = p.position
WHERE NOT $identity
GROUP BY p.user_key, g.slot;

CREATE OR REPLACE TEMP TABLE plus_room AS
WITH users AS (
    SELECT user_key FROM plus_past
    UNION
    SELECT user_key FROM cell_rows($campaign, $day, $day)
),
norms AS (
    SELECT user_key, sum(value * value) AS past FROM plus_past_slots WHERE $identity
    GROUP BY user_key
    UNION ALL
    SELECT user_key, greatest(sum(weight * value * value), 0.0) AS past FROM plus_past_slots
    WHERE NOT $identity
    GROUP BY user_key
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
-- each conversion's entries in slot space: M·w with each slot's weight
slotted AS (
    SELECT user_key, user_rank, cell_key AS part, position AS slot, 1.0 AS weight, w
    FROM rows
    WHERE $identity
    UNION ALL
    SELECT
        r.user_key,
        r.user_rank,
        g.slot AS part,
        g.slot,
        any_value(g.weight) AS weight,
        sum(g.coef * r.w) AS w
    FROM rows AS r
    JOIN gram_slots AS g ON g.position = r.position
    WHERE NOT $identity
    GROUP BY r.user_key, r.user_rank, g.slot
),
running AS (
    SELECT
        *,
        sum(w) OVER (
            PARTITION BY user_key, part ORDER BY user_rank
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS before
    FROM slotted
),
per_conversion AS (
    SELECT
        ru.user_key,
        ru.user_rank,
        greatest($ctt * $ctt * sum(ru.weight * ru.w * ru.w), 0.0) AS a,
        $ctt * sum(
            ru.weight * ru.w * (coalesce(p.value, 0.0) + $ctt * coalesce(ru.before, 0.0))
        ) AS b
    FROM running AS ru
    LEFT JOIN plus_past_slots AS p ON p.user_key = ru.user_key AND p.slot = ru.slot
    GROUP BY ru.user_key, ru.user_rank
),
rising AS (
    SELECT
        c.*,
        greatest(
            m.past + coalesce(
                sum(c.a + 2 * c.b) OVER (
                    PARTITION BY c.user_key ORDER BY c.user_rank
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
                ),
                0.0
            ),
            0.0
        ) AS q,
        m.room
    FROM per_conversion AS c
    JOIN plus_room AS m ON m.user_key = c.user_key
)
SELECT
    *,
    -- the highest q so far (q itself when q never falls: the identity Gram)
    CASE
        WHEN $identity THEN q
        ELSE max(q) OVER (
            PARTITION BY user_key ORDER BY user_rank
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        )
    END AS peak
FROM rising;

CREATE OR REPLACE TEMP TABLE plus_kept AS
SELECT
    user_key,
    user_rank,
    least(
        CASE WHEN user_rank < $whole THEN 1.0 ELSE $fraction END,
        CASE
            WHEN peak > room AND NOT $identity THEN 0.0
            WHEN a = 0 OR q + a + 2 * b <= room THEN 1.0
            WHEN room - q <= 0 THEN 0.0
            WHEN b >= 0 THEN least(1.0, (room - q) / (b + sqrt(b * b + a * (room - q))))
            ELSE least(1.0, (sqrt(b * b + a * (room - q)) - b) / a)
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

-- The spend is charged from exactly those released rows: cost = ‖encode(row_u)‖₂² / (2σ²).
INSERT INTO plus_user_spend
WITH row_slots AS (
    SELECT r.user_key, any_value(g.weight) AS weight, sum(g.coef * r.value) AS value
    FROM plus_user_rows AS r
    JOIN gram_slots AS g ON g.position = r.position
    WHERE NOT $identity
    GROUP BY r.user_key, g.slot
),
costs AS (
    SELECT user_key, sum(value * value) / $two_var AS cost
    FROM plus_user_rows
    WHERE $identity
    GROUP BY user_key
    HAVING sum(value * value) > 0
    UNION ALL
    SELECT user_key, sum(weight * value * value) / $two_var AS cost
    FROM row_slots
    GROUP BY user_key
    HAVING sum(weight * value * value) > 0
)
SELECT $campaign, CAST($day AS DATE), c.user_key, c.cost, coalesce(s.spend, 0.0) + c.cost
FROM costs AS c
LEFT JOIN plus_spent AS s ON s.user_key = c.user_key;

SELECT position, sum(value) AS value
FROM plus_user_rows
GROUP BY position
ORDER BY position;
