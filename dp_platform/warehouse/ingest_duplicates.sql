-- Duplicate events among this load's rows, decided exactly on the candidate rows found by
-- ingest_duplicate_candidates*.sql (view `events`: user_key, id, load_id, source_row of the
-- kind's table; the load's rows are inserted already and passed the row checks). An event is
-- its (user, id): another user's row with the same id is another event, never a duplicate.
-- * duplicate_loaded: the user's id was in the warehouse before this load (every copy here);
-- * duplicate_in_load: the user's id repeats within this file; the first copy (lowest row) is
--   kept.
-- They leave the table and join `rejected`, inside the load's transaction.
CREATE OR REPLACE TEMP TABLE duplicates AS
WITH
candidate AS (
    SELECT e.user_key, e.id, e.source_row
    FROM events AS e
    SEMI JOIN (SELECT DISTINCT source_row FROM duplicate_candidates) AS c
        ON c.source_row = e.source_row
    WHERE e.load_id = $load_id
),
loaded AS (
    SELECT c.source_row
    FROM candidate AS c
    SEMI JOIN (SELECT user_key, id FROM events WHERE load_id <> $load_id) AS e
        ON e.user_key = c.user_key AND e.id = c.id
),
later AS (
    SELECT source_row
    FROM (
        SELECT
            c.source_row,
            row_number() OVER (PARTITION BY c.user_key, c.id ORDER BY c.source_row) AS copy
        FROM candidate AS c
        ANTI JOIN loaded AS l ON l.source_row = c.source_row
    )
    WHERE copy > 1
)
SELECT source_row, 'duplicate_loaded' AS reason FROM loaded
UNION ALL
SELECT source_row, 'duplicate_in_load' AS reason FROM later;

INSERT INTO rejected SELECT source_row, reason FROM duplicates;

DELETE FROM impressions
WHERE $kind = 'impressions'
  AND load_id = $load_id
  AND source_row IN (SELECT source_row FROM duplicates);

DELETE FROM conversions
WHERE $kind = 'conversions'
  AND load_id = $load_id
  AND source_row IN (SELECT source_row FROM duplicates);
