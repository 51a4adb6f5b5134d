-- Rows of `checked` that passed every check, and which of them overflow their tie group (DuckDB
-- twin: ../ingest_insert_impressions.sql). The days this file touches are ranked again whole by
-- ingest_rewrite_impressions.sql: their loaded rows plus the new ones, each impression ranked by
-- impression_id among those of the same user and advertiser at the same microsecond (tie, 0
-- almost always). A group of more than :max_tie impressions (the key's room) that holds rows of
-- this file sends this file's rows of it to quarantine as too_many_at_instant and keeps the
-- earlier ones. A day's loaded rows here are those of committed loads and of ingests that may
-- still commit theirs (a load id after :last, the last committed when this ingest began:
-- visibility.py), not those of loads that never will; an impression is counted once however
-- many of those loads hold it (its id: a cut ingest's rows and the same file's rows loaded
-- again are one impression, and at most one of their loads is ever read).
CACHE TABLE new_impressions AS
SELECT
    v.id AS impression_id, u.user_key, p.publisher_key, a.advertiser_key,
    timestamp_micros(v.ts_us) AS ts, v.interaction, CAST(:load_id AS BIGINT) AS load_id,
    v.source_row, CAST(timestamp_micros(v.ts_us) AS DATE) AS day
FROM checked AS v
JOIN users AS u ON u.user_id = v.user_id
JOIN publishers AS p ON p.publisher_id = v.publisher_id
JOIN advertisers AS a ON a.advertiser_id = v.advertiser_id
WHERE v.reason IS NULL;

CACHE TABLE touched_impressions AS
WITH
touched AS (
    SELECT impression_id, user_key, publisher_key, advertiser_key, ts, interaction, load_id,
           source_row, day
    FROM impressions_rows
    WHERE day IN (SELECT DISTINCT day FROM new_impressions)
      AND (load_id > :last OR load_id IN (SELECT load_id FROM loads))
    UNION ALL
    SELECT * FROM new_impressions
),
grouped AS (
    SELECT
        *,
        size(collect_set(impression_id) OVER (PARTITION BY user_key, advertiser_key, ts))
            AS group_size,
        max(CASE WHEN load_id = :load_id THEN 1 ELSE 0 END)
            OVER (PARTITION BY user_key, advertiser_key, ts) AS has_new
    FROM touched
),
flagged AS (
    SELECT
        *,
        load_id = :load_id AND has_new = 1 AND group_size > :max_tie AS overflowed
    FROM grouped
)
SELECT * FROM flagged;

CACHE TABLE overflow AS
SELECT source_row, 'too_many_at_instant' AS reason
FROM touched_impressions
WHERE overflowed;

INSERT INTO advertiser_publishers_rows
SELECT DISTINCT n.advertiser_key, n.publisher_key, :load_id
FROM touched_impressions AS n
LEFT ANTI JOIN advertiser_publishers AS x
    ON x.advertiser_key = n.advertiser_key AND x.publisher_key = n.publisher_key
WHERE n.load_id = :load_id AND NOT n.overflowed;
