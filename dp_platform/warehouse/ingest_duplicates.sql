-- Duplicate ids among the rows that passed the row-level checks (table `checked`).
-- * duplicate_loaded: the id is already in the warehouse (every copy in this file);
-- * duplicate_in_load: the id repeats within this file; the first copy (lowest row) is kept.
-- Finds the few repeated ids by aggregation first, so the window runs on those rows only.
-- Afterwards `checked.reason` IS NULL exactly for the rows to load.
CREATE OR REPLACE TEMP TABLE duplicates AS
WITH
loaded AS (
    SELECT c.source_row
    FROM checked AS c
    JOIN loaded_ids AS l ON l.id = c.id
    WHERE c.reason IS NULL
),
repeated AS (
    SELECT id
    FROM checked
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
        FROM checked AS c
        SEMI JOIN repeated AS r ON r.id = c.id
        WHERE c.reason IS NULL
          AND c.source_row NOT IN (SELECT source_row FROM loaded)
    )
    WHERE copy > 1
)
SELECT source_row, 'duplicate_loaded' AS reason FROM loaded
UNION ALL
SELECT source_row, 'duplicate_in_load' AS reason FROM later;

-- the few duplicates are marked in place: no second copy of a large file
UPDATE checked
SET reason = d.reason
FROM duplicates AS d
WHERE checked.source_row = d.source_row;
