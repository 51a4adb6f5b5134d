-- Surrogate keys for ids seen for the first time among the rows that passed the row checks
-- (collected by the check's scan into `scanned`). New keys continue after the largest
-- existing one, in id order (reproducible loads). Duplicates are removed after the insert, so
-- an id seen only in a duplicate row gets a key too (a key alone is no event: nothing is
-- counted for it).
INSERT INTO users (user_key, user_id)
SELECT
    (SELECT coalesce(max(user_key), -1) FROM users) + row_number() OVER (ORDER BY n.user_id),
    n.user_id
FROM (SELECT user_id FROM scanned WHERE no_user = 0 AND user_id IS NOT NULL) AS n
ANTI JOIN users AS u ON u.user_id = n.user_id;

INSERT INTO publishers (publisher_key, publisher_id)
SELECT
    (SELECT coalesce(max(publisher_key), -1) FROM publishers)
        + row_number() OVER (ORDER BY n.publisher_id),
    n.publisher_id
FROM (
    SELECT publisher_id FROM scanned WHERE no_publisher = 0 AND publisher_id IS NOT NULL
) AS n
ANTI JOIN publishers AS p ON p.publisher_id = n.publisher_id;

INSERT INTO advertisers (advertiser_key, advertiser_id)
SELECT
    (SELECT coalesce(max(advertiser_key), -1) FROM advertisers)
        + row_number() OVER (ORDER BY n.advertiser_id),
    n.advertiser_id
FROM (
    SELECT advertiser_id FROM scanned WHERE no_advertiser = 0 AND advertiser_id IS NOT NULL
) AS n
ANTI JOIN advertisers AS a ON a.advertiser_id = n.advertiser_id;
