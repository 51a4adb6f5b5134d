-- Rows of `checked` that passed every check into the warehouse. conversion_key = the largest
-- key so far + the row number: unique, no window over the file (gaps are harmless).
CREATE OR REPLACE TEMP TABLE overflow AS
SELECT CAST(NULL AS BIGINT) AS source_row, CAST(NULL AS VARCHAR) AS reason
WHERE false;

INSERT INTO conversions
SELECT
    (SELECT coalesce(max(conversion_key), 0) FROM conversions) + v.source_row,
    v.id, u.user_key, a.advertiser_key, v.ts, v.value, $load_id, v.source_row
FROM checked AS v
JOIN users AS u ON u.user_id = v.user_id
JOIN advertisers AS a ON a.advertiser_id = v.advertiser_id
WHERE v.reason IS NULL;
