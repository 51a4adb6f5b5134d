-- Surrogate keys for ids seen for the first time among the rows to load (table `checked`).
-- New keys continue after the largest existing one, in id order (reproducible loads).
INSERT INTO users (user_key, user_id)
SELECT
    (SELECT coalesce(max(user_key), -1) FROM users) + row_number() OVER (ORDER BY n.user_id),
    n.user_id
FROM (SELECT DISTINCT user_id FROM checked WHERE reason IS NULL) AS n
ANTI JOIN users AS u ON u.user_id = n.user_id;

INSERT INTO publishers (publisher_key, publisher_id)
SELECT
    (SELECT coalesce(max(publisher_key), -1) FROM publishers)
        + row_number() OVER (ORDER BY n.publisher_id),
    n.publisher_id
FROM (
    SELECT DISTINCT publisher_id FROM checked WHERE reason IS NULL AND publisher_id IS NOT NULL
) AS n
ANTI JOIN publishers AS p ON p.publisher_id = n.publisher_id;

INSERT INTO advertisers (advertiser_key, advertiser_id)
SELECT
    (SELECT coalesce(max(advertiser_key), -1) FROM advertisers)
        + row_number() OVER (ORDER BY n.advertiser_id),
    n.advertiser_id
FROM (SELECT DISTINCT advertiser_id FROM checked WHERE reason IS NULL) AS n
ANTI JOIN advertisers AS a ON a.advertiser_id = n.advertiser_id;
