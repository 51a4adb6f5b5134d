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
-- One shuffle by (user, id): the join to the loaded ids and the copies' numbering share it (a
-- loaded id marks every copy, so numbering the copies among all of them is the same).
CACHE TABLE checked AS
WITH
known AS (
    SELECT DISTINCT u.user_id, l.id
    FROM loaded_ids AS l
    JOIN users AS u ON u.user_key = l.user_key
),
marked AS (
    SELECT
        c.*,
        k.id IS NOT NULL AS is_loaded,
        row_number() OVER (
            PARTITION BY c.user_id, c.id, c.reason IS NULL ORDER BY c.source_row
        ) AS copy
    FROM checked_raw AS c
    LEFT JOIN known AS k ON k.user_id = c.user_id AND k.id = c.id
)
SELECT
    source_row, id, user_id, publisher_id, advertiser_id, ts_us, interaction, value,
    coalesce(
        reason,
        CASE WHEN is_loaded THEN 'duplicate_loaded' WHEN copy > 1 THEN 'duplicate_in_load' END
    ) AS reason
FROM marked;
