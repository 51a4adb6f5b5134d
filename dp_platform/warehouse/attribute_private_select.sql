-- Private last touch, step 2 of 2: per conversion, the candidate minimising ln(E) - a, where E
-- is the candidate's Exp(1) draw (table race_noise, registered from Python) and
-- a = eps * score / (2 * sensitivity) — the exponential race, i.e. the exponential mechanism
-- P(i) ∝ exp(eps * s(i) / (2Δ)) (dp_platform/attribution/private_touch.py). Scores relative to
-- the conversion (age in hours): time: -age; exp_time: exp(-age); inverse_gap: -1/max(age, α).
-- The winners (publisher and touch: attribution_scope.sql) are stored once in
-- private_touch_choices; then every conversion of the range with a stored choice is attributed
-- from it (weight 1; user_rank as in attribute_lta.sql), so a re-run returns the same rows and
-- draws nothing for conversions drawn before.
INSERT INTO private_touch_choices
WITH
keyed AS (
    SELECT
        p.conversion_key, p.publisher_key, p.touch,
        ln(n.e) - $eps_half_over_delta * CASE $score
            WHEN 'time' THEN -p.age_hours
            WHEN 'exp_time' THEN exp(-p.age_hours)
            WHEN 'inverse_gap' THEN -1.0 / greatest(p.age_hours, $alpha_hours)
        END AS race_key
    FROM private_candidates AS p
    JOIN race_noise AS n ON n.idx = p.idx
)
SELECT $campaign, conversion_key, winner.publisher_key, winner.touch
FROM (
    SELECT
        conversion_key,
        arg_min(struct_pack(publisher_key := publisher_key, touch := touch), race_key) AS winner
    FROM keyed
    GROUP BY conversion_key
);

INSERT INTO attributed_conversions
SELECT
    $campaign, conv.day, conv.conversion_key, conv.user_key,
    CAST(
        row_number() OVER (PARTITION BY conv.user_key, conv.day ORDER BY conv.ts, conv.conversion_id)
        - 1 AS INTEGER
    ),
    chosen.publisher_key, 1.0, chosen.touch
FROM scope_conversions($advertiser, $first, $last, $tie_room) AS conv
JOIN private_touch_choices AS chosen
    ON chosen.campaign = $campaign AND chosen.conversion_key = conv.conversion_key
ORDER BY conv.day;

DROP TABLE private_candidates;
