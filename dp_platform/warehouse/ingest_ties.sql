-- Ties: impressions of one user and advertiser at the same microsecond, in this load or
-- already loaded, are ranked by impression_id and re-keyed (ord_key, see schema.sql). A group
-- larger than $max_tie (the key's room per microsecond) keeps its earlier rows and sends this
-- load's rows to quarantine as too_many_at_instant. Only the time span of this load is
-- searched. Ties are rare: neighbours among the sorted hashes of (user, advertiser, ts) find
-- the candidate instants, and the exact groups are formed on those only.
CREATE OR REPLACE TEMP TABLE tie_candidates AS
WITH span AS (
    SELECT min(ts) AS lo, max(ts) AS hi FROM impressions WHERE load_id = $load_id
)
SELECT DISTINCT h
FROM (
    SELECT h, lag(h) OVER (ORDER BY h) AS previous
    FROM (
        SELECT hash(i.user_key, i.advertiser_key, i.ts) AS h
        FROM impressions AS i, span
        WHERE i.ts BETWEEN span.lo AND span.hi
    )
)
WHERE h = previous;

CREATE OR REPLACE TEMP TABLE tie_groups AS
WITH span AS (
    SELECT min(ts) AS lo, max(ts) AS hi FROM impressions WHERE load_id = $load_id
)
SELECT i.user_key, i.advertiser_key, i.ts, count(*) AS group_size
FROM impressions AS i, span
WHERE i.ts BETWEEN span.lo AND span.hi
  AND hash(i.user_key, i.advertiser_key, i.ts) IN (SELECT h FROM tie_candidates)
GROUP BY i.user_key, i.advertiser_key, i.ts
HAVING count(*) > 1 AND bool_or(i.load_id = $load_id);

CREATE OR REPLACE TEMP TABLE tie_ranks AS
SELECT
    i.impression_id, i.user_key, i.advertiser_key, i.ts, i.load_id, i.source_row, g.group_size,
    row_number() OVER (
        PARTITION BY i.user_key, i.advertiser_key, i.ts ORDER BY i.impression_id
    ) - 1 AS tie
FROM impressions AS i
JOIN tie_groups AS g
    ON g.user_key = i.user_key AND g.advertiser_key = i.advertiser_key AND g.ts = i.ts;

CREATE OR REPLACE TEMP TABLE overflow AS
SELECT source_row, 'too_many_at_instant' AS reason
FROM tie_ranks
WHERE load_id = $load_id AND group_size > $max_tie;

DELETE FROM impressions
WHERE load_id = $load_id AND source_row IN (SELECT source_row FROM overflow);

UPDATE impressions
SET ord_key = epoch_us(impressions.ts) * $tie_room + r.tie
FROM (
    -- an oversized group is ranked without this file's rows (they were just removed)
    SELECT
        impression_id, user_key, advertiser_key, ts,
        row_number() OVER (
            PARTITION BY user_key, advertiser_key, ts ORDER BY impression_id
        ) - 1 AS tie
    FROM tie_ranks
    WHERE NOT (load_id = $load_id AND group_size > $max_tie)
) AS r
WHERE impressions.user_key = r.user_key
  AND impressions.advertiser_key = r.advertiser_key
  AND impressions.ts = r.ts
  AND impressions.impression_id = r.impression_id;

INSERT INTO advertiser_publishers
SELECT DISTINCT n.advertiser_key, n.publisher_key
FROM impressions AS n
ANTI JOIN advertiser_publishers AS x
    ON x.advertiser_key = n.advertiser_key AND x.publisher_key = n.publisher_key
WHERE n.load_id = $load_id;
