-- Private last touch, step 1 of 2 (DuckDB twin: ../attribute_private_candidates.sql): every
-- candidate of every conversion of days :first..:last with its age in hours and a dense index
-- idx ordering the candidates by (conversion_key, ord_key) — the same idx on both engines, so
-- the same Exp(1) draws meet the same candidates. Python draws one Exp(1) per idx from
-- privacy/ (never Spark's rand()); step 2 picks the race's winner per conversion.
-- The view is checkpointed by the runner (CACHE): counted once, read once more.
CACHE TABLE private_candidates AS
SELECT
    conversion_key, conversion_id, user_key, day, ts, publisher_key, ord_key,
    CAST(age_us AS DOUBLE) / 3600000000.0D AS age_hours,
    row_number() OVER (ORDER BY conversion_key, ord_key) - 1 AS idx
FROM scope_candidates;

SELECT count(*) FROM private_candidates;
