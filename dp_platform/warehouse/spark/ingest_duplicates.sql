-- Duplicate ids among the rows that passed the row-level checks (view `checked_raw`, the
-- file's rows as checked by ../ingest_check_*.sql; view `loaded_ids`, the ids already loaded).
-- DuckDB twin: ../ingest_duplicates.sql, which marks the duplicates in place; Parquet has no
-- UPDATE, so here `checked` is checked_raw with the duplicate reasons filled in.
-- * duplicate_loaded: the id is already in the warehouse (every copy in this file);
-- * duplicate_in_load: the id repeats within this file; the first copy (lowest row) is kept.
CACHE TABLE checked AS
WITH
loaded AS (
    SELECT c.source_row
    FROM checked_raw AS c
    LEFT SEMI JOIN loaded_ids AS l ON l.id = c.id
    WHERE c.reason IS NULL
),
repeated AS (
    SELECT id
    FROM checked_raw
    WHERE reason IS NULL
    GROUP BY id
    HAVING count(*) > 1
),
later AS (
    SELECT source_row
    FROM (
        SELECT
            c.source_row,
            row_number() OVER (PARTITION BY c.id ORDER BY c.source_row) AS copy
        FROM checked_raw AS c
        LEFT SEMI JOIN repeated AS r ON r.id = c.id
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
