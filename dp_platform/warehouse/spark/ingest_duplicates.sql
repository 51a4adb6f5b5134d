-- Duplicate events among the rows that passed the row-level checks (view `checked_raw`, the
-- file's rows as checked by ../ingest_check_*.sql; view `loaded_ids`, the (user_key, id) of
-- every event already loaded). An event is its user and its id: another user's row with the
-- same id is another event, never a duplicate (../ingest_duplicate_candidates.sql says why).
-- DuckDB twin: ../ingest_duplicates.sql, which marks the duplicates in place; Parquet has no
-- UPDATE, so here `checked` is checked_raw with the duplicate reasons filled in. It runs before
-- this load's keys are made, so a user new to the warehouse has no key and no loaded event.
-- * duplicate_loaded: the user's id is already in the warehouse (every copy in this file);
-- * duplicate_in_load: the user's id repeats within this file; the first copy (lowest row) is
--   kept.
CACHE TABLE checked AS
WITH
loaded AS (
    SELECT c.source_row
    FROM checked_raw AS c
    JOIN users AS u ON u.user_id = c.user_id
    LEFT SEMI JOIN loaded_ids AS l ON l.user_key = u.user_key AND l.id = c.id
    WHERE c.reason IS NULL
),
repeated AS (
    SELECT user_id, id
    FROM checked_raw
    WHERE reason IS NULL
    GROUP BY user_id, id
    HAVING count(*) > 1
),
later AS (
    SELECT source_row
    FROM (
        SELECT
            c.source_row,
            row_number() OVER (PARTITION BY c.user_id, c.id ORDER BY c.source_row) AS copy
        FROM checked_raw AS c
        LEFT SEMI JOIN repeated AS r ON r.user_id = c.user_id AND r.id = c.id
        LEFT ANTI JOIN loaded AS l ON l.source_row = c.source_row
        WHERE c.reason IS NULL
    )
    WHERE copy > 1
),
duplicates AS (
    SELECT source_row, 'duplicate_loaded' AS reason FROM loaded
    UNION ALL
    SELECT source_row, 'duplicate_in_load' AS reason FROM later
)
SELECT
    c.source_row, c.id, c.user_id, c.publisher_id, c.advertiser_id, c.ts_us, c.interaction,
    c.value, coalesce(c.reason, d.reason) AS reason
FROM checked_raw AS c
LEFT JOIN duplicates AS d ON d.source_row = c.source_row;
