-- Private last touch, step 2 of 3 (DuckDB twin: the first statement of
-- ../attribute_private_select.sql): per conversion drawn now, the candidate minimising
-- ln(E) - a, E its Exp(1) draw (view race_noise, registered from Python) and
-- a = eps * score / (2 * sensitivity): the exponential race. Scores relative to the conversion
-- (age in hours): time: -age; exp_time: exp(-age); inverse_gap: -1/max(age, alpha). The
-- winners (publisher and touch: attribution_scope.sql) are written as batch :batch of
-- private_touch_choices in one Delta commit (all of it or none); step 3
-- (attribute_private_stored.sql) attributes from the choices.
-- The insert reads the campaign's stored choices itself: a conversion another run stored
-- since the candidates were read is not written again (its draw here is dropped, never
-- released), and one stored while this statement runs fails it (Delta's
-- ConcurrentAppendException: the read is part of the write's transaction), so no conversion
-- is ever stored, or its epsilon spent, twice.
INSERT INTO private_touch_choices
WITH
keyed AS (
    SELECT
        p.conversion_key, p.publisher_key, p.touch,
        ln(n.e) - :eps_half_over_delta * CASE :score
            WHEN 'time' THEN -p.age_hours
            WHEN 'exp_time' THEN exp(-p.age_hours)
            WHEN 'inverse_gap' THEN -1.0D / greatest(p.age_hours, :alpha_hours)
        END AS race_key
    FROM private_candidates AS p
    JOIN race_noise AS n ON n.idx = p.idx
)
SELECT conversion_key, winner.publisher_key, winner.touch, :campaign, CAST(:batch AS BIGINT)
FROM (
    SELECT
        conversion_key,
        min_by(named_struct('publisher_key', publisher_key, 'touch', touch), race_key) AS winner
    FROM keyed
    GROUP BY conversion_key
) AS drawn
WHERE NOT EXISTS (
    SELECT 1 FROM private_touch_choices AS s
    WHERE s.campaign = :campaign AND s.conversion_key = drawn.conversion_key
);
