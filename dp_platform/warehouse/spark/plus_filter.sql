-- AdsBPC+ clipping with the individual filter for one day, for any strategy row and any cell
-- strategy (DuckDB twin: ../plus_filter.sql, where the rule is explained; privacy/filter.py and
-- evaluation/plus_data.RowFilter are the NumPy twins). Parameters: bound r = :whole + :fraction,
-- :two_var = 2σ², :cap the filter's budget, :residual; the strategy row :ctt = C_tt, the zipped
-- lists :past_days, :past_coefs (C_tj of the earlier days), and :carry (whether later rows read
-- this day's kept values; the diagonal strategy is C_tt = 1, no earlier days, no carry).
-- The norm: view gram_slots (position, slot, coef, weight) of the layout's Gram, every inner
-- product Σ_s g_s·(Mx)_s·(My)_s; :identity = the Gram is the identity (the view is then empty and
-- never read: the plain sums, without the join).
-- The rows are the day's entries of the released vector (view cell_rows: its weights on the
-- campaign's publishers, or its cells — cell_rows.sql; view cell_positions: a key's vector
-- position, and what has none is not released, weight 0 for the norm), so a user's earlier days
-- are carried per vector position — per cell for a campaign with cells. The runner checkpoints
-- the CACHE views, so the spend rows and the vector come from one evaluation. Each INSERT
-- appends the day's rows tagged with this run (:run) in one commit; the earlier days' rows
-- read are those of the run plus_spend_days records for each (a crashed or losing run's rows
-- are never read); every earlier day is committed (days run in order).
CACHE TABLE plus_past AS
WITH coefficients AS (
    SELECT inline(arrays_zip(:past_days, :past_coefs)) AS (day, coef)
)
SELECT v.user_key, v.position, sum(c.coef * v.value) AS value
FROM plus_user_values AS v
JOIN coefficients AS c ON c.day = v.day
JOIN plus_spend_days AS d ON d.campaign = v.campaign AND d.day = v.day AND d.run <=> v.run
WHERE v.campaign = :campaign
GROUP BY v.user_key, v.position;

CACHE TABLE plus_spent AS
SELECT s.user_key, max_by(s.spend, s.day) AS spend
FROM plus_user_spend AS s
JOIN plus_spend_days AS d ON d.campaign = s.campaign AND d.day = s.day AND d.run <=> s.run
WHERE s.campaign = :campaign AND s.day < :day
GROUP BY s.user_key;

-- P_u in slot space (M·P_u, with each slot's weight).
CACHE TABLE plus_past_slots AS
SELECT user_key, position AS slot, 1.0D AS weight, value
FROM plus_past
WHERE :identity
UNION ALL
SELECT p.user_key, g.slot, any_value(g.weight) AS weight, sum(g.coef * p.value) AS value
FROM plus_past AS p
JOIN gram_slots AS g ON g.position = p.position
WHERE NOT :identity
GROUP BY p.user_key, g.slot;

CACHE TABLE plus_room AS
WITH users AS (
    SELECT user_key FROM plus_past
    UNION
    SELECT user_key FROM cell_rows
),
norms AS (
    SELECT user_key, sum(value * value) AS past FROM plus_past_slots WHERE :identity
    GROUP BY user_key
    UNION ALL
    SELECT user_key, greatest(sum(weight * value * value), 0.0D) AS past FROM plus_past_slots
    WHERE NOT :identity
    GROUP BY user_key
)
SELECT
    u.user_key,
    coalesce(n.past, 0.0D) AS past,
    CASE
        WHEN :cap - coalesce(s.spend, 0.0D) > :residual * :cap
            THEN :two_var * (:cap - coalesce(s.spend, 0.0D))
        ELSE 0.0D
    END AS room
FROM users AS u
LEFT JOIN norms AS n ON n.user_key = u.user_key
LEFT JOIN plus_spent AS s ON s.user_key = u.user_key;

CACHE TABLE plus_conversions AS
WITH rows AS (
    SELECT
        r.user_key,
        r.user_rank,
        r.cell_key,
        any_value(cp.position) AS position,
        sum(CASE WHEN cp.cell_key IS NULL THEN 0.0D ELSE r.weight END) AS w
    FROM cell_rows AS r
    LEFT JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
    WHERE r.user_rank <= :whole
    GROUP BY r.user_key, r.user_rank, r.cell_key
),
-- each conversion's entries in slot space: M·w with each slot's weight
slotted AS (
    SELECT user_key, user_rank, cell_key AS part, position AS slot, 1.0D AS weight, w
    FROM rows
    WHERE :identity
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
    WHERE NOT :identity
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
        greatest(:ctt * :ctt * sum(ru.weight * ru.w * ru.w), 0.0D) AS a,
        :ctt * sum(
            ru.weight * ru.w * (coalesce(p.value, 0.0D) + :ctt * coalesce(ru.before, 0.0D))
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
                0.0D
            ),
            0.0D
        ) AS q,
        m.room
    FROM per_conversion AS c
    JOIN plus_room AS m ON m.user_key = c.user_key
)
SELECT
    *,
    -- the highest q so far (q itself when q never falls: the identity Gram)
    CASE
        WHEN :identity THEN q
        ELSE max(q) OVER (
            PARTITION BY user_key ORDER BY user_rank
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        )
    END AS peak
FROM rising;

CACHE TABLE plus_kept AS
SELECT
    user_key,
    user_rank,
    least(
        CASE WHEN user_rank < :whole THEN 1.0D ELSE :fraction END,
        CASE
            WHEN peak > room AND NOT :identity THEN 0.0D
            WHEN a = 0 OR q + a + 2 * b <= room THEN 1.0D
            WHEN room - q <= 0 THEN 0.0D
            WHEN b >= 0 THEN least(1.0D, (room - q) / (b + sqrt(b * b + a * (room - q))))
            ELSE least(1.0D, (sqrt(b * b + a * (room - q)) - b) / a)
        END
    ) AS f
FROM plus_conversions;

-- The day's kept values per (user, vector position): what later rows carry through C.
CACHE TABLE plus_today AS
SELECT r.user_key, cp.position, sum(r.weight * k.f) AS value
FROM cell_rows AS r
JOIN plus_kept AS k ON k.user_key = r.user_key AND k.user_rank = r.user_rank
JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
WHERE k.f > 0
GROUP BY r.user_key, cp.position;

INSERT INTO plus_user_values
SELECT user_key, position, value, :campaign, :day, :run
FROM plus_today
WHERE :carry AND value > 0;

-- What is released: per (user, position) α·(P_u + C_tt·k_u).
CACHE TABLE plus_user_rows AS
WITH scaled AS (
    SELECT user_key, CASE WHEN past > room THEN sqrt(room / past) ELSE 1.0D END AS alpha
    FROM plus_room
)
SELECT
    coalesce(t.user_key, p.user_key) AS user_key,
    coalesce(t.position, p.position) AS position,
    s.alpha * (coalesce(p.value, 0.0D) + :ctt * coalesce(t.value, 0.0D)) AS value
FROM plus_today AS t
FULL OUTER JOIN plus_past AS p ON p.user_key = t.user_key AND p.position = t.position
JOIN scaled AS s ON s.user_key = coalesce(t.user_key, p.user_key);

-- The spend is charged from exactly those released rows: cost = ‖encode(row_u)‖₂² / (2σ²).
INSERT INTO plus_user_spend
WITH row_slots AS (
    SELECT r.user_key, any_value(g.weight) AS weight, sum(g.coef * r.value) AS value
    FROM plus_user_rows AS r
    JOIN gram_slots AS g ON g.position = r.position
    WHERE NOT :identity
    GROUP BY r.user_key, g.slot
),
costs AS (
    SELECT user_key, sum(value * value) / :two_var AS cost
    FROM plus_user_rows
    WHERE :identity
    GROUP BY user_key
    HAVING sum(value * value) > 0
    UNION ALL
    SELECT user_key, sum(weight * value * value) / :two_var AS cost
    FROM row_slots
    GROUP BY user_key
    HAVING sum(weight * value * value) > 0
)
SELECT c.user_key, c.cost, coalesce(s.spend, 0.0D) + c.cost, :campaign, :day, :run
FROM costs AS c
LEFT JOIN plus_spent AS s ON s.user_key = c.user_key;

SELECT position, sum(value) AS value
FROM plus_user_rows
GROUP BY position
ORDER BY position;
