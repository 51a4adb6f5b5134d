-- The campaign's publishers in release order (temp table `campaign_pubs`): position is the
-- index in the clipped vector; publisher_key is NULL for a listed publisher with no events yet.
CREATE OR REPLACE TEMP TABLE campaign_pubs AS
SELECT l.position, l.publisher_id, p.publisher_key
FROM (
    SELECT
        unnest($publisher_ids) AS publisher_id,
        generate_subscripts($publisher_ids, 1) - 1 AS position
) AS l
LEFT JOIN publishers AS p ON p.publisher_id = l.publisher_id;
