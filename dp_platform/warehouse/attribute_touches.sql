-- Multi-touch attribution ($rule: uni | time_decay | u_shaped; lta and fta too, as a cross-check
-- of the ASOF versions). Candidates from attribution_scope.sql, ordered by ord_key = (ts,
-- impression_id). Weights of one conversion's m candidates:
--   uni         1/m each;
--   time_decay  proportional to 2^(-(conv.ts - imp.ts) / half_life), normalised to sum 1
--               (computed relative to the newest candidate, so nothing underflows);
--   u_shaped    40% first, 40% last, 20% split evenly over the m - 2 in between;
--               m = 1: 100%; m = 2: 50% / 50%;
--   lta / fta   1 to the last / first.
-- Rows are per (conversion, publisher, touch): a publisher's weights within one conversion add
-- up, kept apart by the credited impressions' touch (attribution_scope.sql: touch_of; one
-- touch, 0, for a campaign without impression dimensions).
INSERT INTO attributed_conversions
WITH
conv AS (
    SELECT * FROM scope_conversions($advertiser, $first, $last, $tie_room)
),
cand AS (
    SELECT
        conversion_key, publisher_key, ord_key, age_us, touch_of(load_id, source_row) AS touch
    FROM scope_candidates($advertiser, $first, $last, $lookback_days, $tie_room)
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
        CASE $rule
            WHEN 'uni' THEN 1.0 / p.m
            WHEN 'lta' THEN CASE WHEN cand.ord_key = p.last_key THEN 1.0 ELSE 0.0 END
            WHEN 'fta' THEN CASE WHEN cand.ord_key = p.first_key THEN 1.0 ELSE 0.0 END
            WHEN 'u_shaped' THEN CASE
                WHEN p.m = 1 THEN 1.0
                WHEN p.m = 2 THEN 0.5
                WHEN cand.ord_key = p.first_key OR cand.ord_key = p.last_key THEN 0.4
                ELSE 0.2 / (p.m - 2)
            END
            WHEN 'time_decay' THEN pow(2.0, -(cand.age_us - p.min_age) / $half_life_us)
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
    FROM conv
    SEMI JOIN per_conv AS p ON p.conversion_key = conv.conversion_key
)
SELECT
    $campaign, r.day, r.conversion_key, r.user_key, CAST(r.user_rank AS INTEGER),
    b.publisher_key,
    CASE WHEN $rule = 'time_decay' THEN b.w / t.total ELSE b.w END,
    b.touch
FROM by_publisher AS b
JOIN totals AS t ON t.conversion_key = b.conversion_key
JOIN ranked AS r ON r.conversion_key = b.conversion_key
WHERE b.w > 0
ORDER BY r.day;
