-- The vector's publishers in release order (view `campaign_pubs`): position is the index in
-- the vector; publisher_key is NULL for a listed publisher with no events yet. The list
-- (DuckDB's $publisher_ids) arrives as the view `publisher_list` (position, publisher_id),
-- registered from Python: a thousand-element literal would cost more to plan than to run.
CREATE OR REPLACE TEMP VIEW campaign_pubs AS
SELECT l.position, l.publisher_id, p.publisher_key
FROM publisher_list AS l
LEFT JOIN publishers AS p ON p.publisher_id = l.publisher_id;
