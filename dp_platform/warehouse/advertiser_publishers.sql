-- Every publisher that has shown an impression of the advertiser, sorted by id: the campaign's
-- publishers when its config says `all` (assumes the advertiser's publisher set is public,
-- e.g. its media plan, so the vector's shape reveals nothing about users).
SELECT p.publisher_id
FROM publishers AS p
WHERE p.publisher_key IN (
    SELECT DISTINCT i.publisher_key
    FROM impressions AS i
    JOIN advertisers AS a ON a.advertiser_key = i.advertiser_key
    WHERE a.advertiser_id = $advertiser
)
ORDER BY p.publisher_id;
