-- Rows that passed the row checks into the warehouse (duplicates are taken out next, by
-- ingest_duplicates.sql, inside the same transaction). conversion_key = the largest key so far
-- + the row number: unique, no window over the file (gaps are harmless). ts is stored as UTC
-- wall time through epoch_us (no time-zone library call per row).
CREATE OR REPLACE TEMP TABLE overflow AS  -- conversions have no ordering key, so no ties
SELECT CAST(NULL AS BIGINT) AS source_row, CAST(NULL AS VARCHAR) AS reason
WHERE false;

INSERT INTO conversions
SELECT
    (SELECT coalesce(max(conversion_key), 0) FROM conversions) + v.source_row,
    v.id, u.user_key, a.advertiser_key, make_timestamp(epoch_us(v.ts)), v.value, $load_id,
    v.source_row
FROM typed AS v
ANTI JOIN rejected AS r ON r.source_row = v.source_row
JOIN users AS u ON u.user_id = v.user_id
JOIN advertisers AS a ON a.advertiser_id = v.advertiser_id;
