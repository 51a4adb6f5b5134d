-- Private last touch, step 2 of 2 (DuckDB twin: ../attribute_private_select.sql): per
-- conversion, the candidate minimising ln(E) - a, E its Exp(1) draw (view race_noise,
-- registered from Python) and a = eps * score / (2 * sensitivity): the exponential race.
-- Scores relative to the conversion (age in hours): time: -age; exp_time: exp(-age);
-- inverse_gap: -1/max(age, alpha). Weight 1 to the winner's publisher.
INSERT INTO attributed_conversions
WITH
keyed AS (
    SELECT
        p.conversion_key, p.conversion_id, p.user_key, p.day, p.ts, p.publisher_key,
        ln(n.e) - :eps_half_over_delta * CASE :score
            WHEN 'time' THEN -p.age_hours
            WHEN 'exp_time' THEN exp(-p.age_hours)
            WHEN 'inverse_gap' THEN -1.0D / greatest(p.age_hours, :alpha_hours)
        END AS race_key
    FROM private_candidates AS p
    JOIN race_noise AS n ON n.idx = p.idx
),
winners AS (
    SELECT
        conversion_key,
        any_value(conversion_id) AS conversion_id,
        any_value(user_key) AS user_key,
        any_value(day) AS day,
        any_value(ts) AS ts,
        min_by(publisher_key, race_key) AS publisher_key
    FROM keyed
    GROUP BY conversion_key
)
SELECT
    conversion_key, user_key,
    CAST(row_number() OVER (PARTITION BY user_key, day ORDER BY ts, conversion_id) - 1 AS INT),
    publisher_key, 1.0D, :campaign, day
FROM winners;
