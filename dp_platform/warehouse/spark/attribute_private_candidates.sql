-- Private last touch, step 1 of 3 (DuckDB twin: ../attribute_private_candidates.sql): every
-- candidate of every conversion of days :first..:last that has no stored choice yet (view
-- `stored_touch_choices`, private_touch_stored.sql), with its age in hours and a dense index
-- idx ordering the candidates by (conversion_key, ord_key) — the same idx on both engines, so
-- the same Exp(1) draws meet the same candidates. Python draws one Exp(1) per idx from
-- privacy/ (never Spark's rand()); step 2 stores the race's winner per conversion.
-- The view is checkpointed by the runner (CACHE): counted once, read once more.
CACHE TABLE private_candidates AS
SELECT
    c.conversion_key, c.publisher_key, c.touch,
    CAST(c.age_us AS DOUBLE) / 3600000000.0D AS age_hours,
    row_number() OVER (ORDER BY c.conversion_key, c.ord_key) - 1 AS idx
FROM scope_candidates AS c
LEFT ANTI JOIN stored_touch_choices AS s ON s.conversion_key = c.conversion_key;

SELECT count(*) FROM private_candidates;
