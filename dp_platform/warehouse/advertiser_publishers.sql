-- Every publisher that has shown an impression of the advertiser, sorted by id: the campaign's
-- publishers when its config says `all` (assumes the advertiser's publisher set is public,
-- e.g. its media plan, so the vector's shape reveals nothing about users).
SELECT p.publisher_id
FROM advertiser_publishers AS x
JOIN advertisers AS a ON a.advertiser_key = x.advertiser_key
JOIN publishers AS p ON p.publisher_key = x.publisher_key
WHERE a.advertiser_id = $advertiser
ORDER BY p.publisher_id;
