-- Multi-touch attribution (:rule uni | time_decay | u_shaped; lta and fta too, as a cross-check
-- of the stream versions); DuckDB twin: ../attribute_touches.sql, same weights:
--   uni         1/m each;
--   time_decay  proportional to 2^(-(conv.ts - imp.ts) / half_life), normalised to sum 1
--               (relative to the newest candidate, so nothing underflows);
--   u_shaped    40% first, 40% last, 20% split evenly over the m - 2 in between;
--               m = 1: 100%; m = 2: 50% / 50%;
--   lta / fta   1 to the last / first.
-- Rows are per (conversion, publisher, touch): a publisher's weights within one conversion add
-- up, kept apart by the credited impressions' touch (attribution_scope.sql). Floating literals
-- are doubles (D): a plain 0.2 would be a DECIMAL in Spark SQL and divide with a decimal's
-- rounding.
-- Written as one Delta commit that replaces the range's rows (INSERT … REPLACE WHERE; Delta
-- checks every row written falls inside it).
INSERT INTO attributed_conversions
REPLACE WHERE campaign = :campaign AND day BETWEEN :first AND :last
WITH
cand AS (
    SELECT conversion_key, publisher_key, ord_key, age_us, touch
    FROM scope_candidates
),
per_conv AS (
    SELECT
        conversion_key,
        count(*) AS m,
        min(ord_key) AS first_key,
        max(ord_key) AS last_key,
        min(age_us) AS min_age
    FROM cand
    GROUP BY conversion_key
),
raw AS (
    SELECT
        cand.conversion_key,
        cand.publisher_key,
        cand.touch,
        CASE :rule
            WHEN 'uni' THEN 1.0D / p.m
            WHEN 'lta' THEN CASE WHEN cand.ord_key = p.last_key THEN 1.0D ELSE 0.0D END
            WHEN 'fta' THEN CASE WHEN cand.ord_key = p.first_key THEN 1.0D ELSE 0.0D END
            WHEN 'u_shaped' THEN CASE
                WHEN p.m = 1 THEN 1.0D
                WHEN p.m = 2 THEN 0.5D
                WHEN cand.ord_key = p.first_key OR cand.ord_key = p.last_key THEN 0.4D
                ELSE 0.2D / (p.m - 2)
            END
            WHEN 'time_decay' THEN pow(2.0D, -(cand.age_us - p.min_age) / CAST(:half_life_us AS DOUBLE))
        END AS w
    FROM cand
    JOIN per_conv AS p ON p.conversion_key = cand.conversion_key
),
by_publisher AS (
    SELECT conversion_key, publisher_key, touch, sum(w) AS w
    FROM raw
    GROUP BY conversion_key, publisher_key, touch
),
totals AS (
    SELECT conversion_key, sum(w) AS total
    FROM by_publisher
    GROUP BY conversion_key
),
ranked AS (
    SELECT
        conv.conversion_key, conv.user_key, conv.day,
        row_number() OVER (
            PARTITION BY conv.user_key, conv.day ORDER BY conv.ts, conv.conversion_id
        ) - 1 AS user_rank
    FROM scope_conversions AS conv
    LEFT SEMI JOIN per_conv AS p ON p.conversion_key = conv.conversion_key
)
SELECT
    r.conversion_key, r.user_key, CAST(r.user_rank AS INT), b.publisher_key,
    CASE WHEN :rule = 'time_decay' THEN b.w / t.total ELSE b.w END,
    b.touch, :campaign, r.day
FROM by_publisher AS b
JOIN totals AS t ON t.conversion_key = b.conversion_key
JOIN ranked AS r ON r.conversion_key = b.conversion_key
WHERE b.w > 0;
