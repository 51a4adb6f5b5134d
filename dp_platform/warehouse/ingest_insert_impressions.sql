-- Accepted impressions into the warehouse, with their ordering key (see schema.sql).
-- Ties: impressions of one user and advertiser at the same microsecond, in this file or
-- already loaded, are ranked by impression_id; existing rows of such a group are re-keyed.
-- A group larger than $max_tie (the key's room per microsecond) keeps its existing rows and
-- sends this file's rows to quarantine as too_many_at_instant.
CREATE OR REPLACE TEMP TABLE accepted AS
SELECT
    v.source_row, v.id, u.user_key, p.publisher_key, a.advertiser_key, v.ts, v.interaction
FROM verdict AS v
JOIN users AS u ON u.user_id = v.user_id
JOIN publishers AS p ON p.publisher_id = v.publisher_id
JOIN advertisers AS a ON a.advertiser_id = v.advertiser_id
WHERE v.reason IS NULL;

CREATE OR REPLACE TEMP TABLE tie_groups AS
WITH
within_file AS (
    SELECT user_key, advertiser_key, ts
    FROM accepted
    GROUP BY ALL
    HAVING count(*) > 1
),
with_loaded AS (
    SELECT DISTINCT n.user_key, n.advertiser_key, n.ts
    FROM accepted AS n
    JOIN impressions AS e
        ON e.user_key = n.user_key AND e.advertiser_key = n.advertiser_key AND e.ts = n.ts
)
SELECT * FROM within_file
UNION
SELECT * FROM with_loaded;

CREATE OR REPLACE TEMP TABLE tie_members AS
SELECT 'new' AS side, a.source_row, a.id, a.user_key, a.advertiser_key, a.ts
FROM accepted AS a
SEMI JOIN tie_groups AS g
    ON g.user_key = a.user_key AND g.advertiser_key = a.advertiser_key AND g.ts = a.ts
UNION ALL
SELECT 'old' AS side, NULL AS source_row, e.impression_id AS id, e.user_key, e.advertiser_key, e.ts
FROM impressions AS e
SEMI JOIN tie_groups AS g
    ON g.user_key = e.user_key AND g.advertiser_key = e.advertiser_key AND g.ts = e.ts;

CREATE OR REPLACE TEMP TABLE tie_ranks AS
SELECT
    side, source_row, id, user_key, advertiser_key, ts,
    row_number() OVER (PARTITION BY user_key, advertiser_key, ts ORDER BY id) - 1 AS tie,
    count(*) OVER (PARTITION BY user_key, advertiser_key, ts) AS group_size
FROM tie_members;

CREATE OR REPLACE TEMP TABLE overflow AS
SELECT source_row, 'too_many_at_instant' AS reason
FROM tie_ranks
WHERE side = 'new' AND group_size > $max_tie;

UPDATE impressions AS e
SET ord_key = epoch_us(e.ts) * $tie_room + r.tie
FROM tie_ranks AS r
WHERE r.side = 'old' AND r.group_size <= $max_tie
  AND e.user_key = r.user_key AND e.advertiser_key = r.advertiser_key AND e.ts = r.ts
  AND e.impression_id = r.id;

INSERT INTO impressions
SELECT
    a.id, a.user_key, a.publisher_key, a.advertiser_key, a.ts, a.interaction,
    epoch_us(a.ts) * $tie_room + coalesce(r.tie, 0),
    $load_id, a.source_row
FROM accepted AS a
LEFT JOIN tie_ranks AS r ON r.side = 'new' AND r.source_row = a.source_row
WHERE a.source_row NOT IN (SELECT source_row FROM overflow);

INSERT INTO advertiser_publishers
SELECT DISTINCT a.advertiser_key, a.publisher_key
FROM accepted AS a
ANTI JOIN advertiser_publishers AS x
    ON x.advertiser_key = a.advertiser_key AND x.publisher_key = a.publisher_key
WHERE a.source_row NOT IN (SELECT source_row FROM overflow);
