-- The vector's publishers in release order (view `campaign_pubs`): position is the index in
-- the vector; publisher_key is NULL for a listed publisher with no events yet.
CREATE OR REPLACE TEMP VIEW campaign_pubs AS
SELECT l.position, l.publisher_id, p.publisher_key
FROM (SELECT posexplode(:publisher_ids) AS (position, publisher_id)) AS l
LEFT JOIN publishers AS p ON p.publisher_id = l.publisher_id;
