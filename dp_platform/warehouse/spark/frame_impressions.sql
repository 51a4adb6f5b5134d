-- The campaign advertiser's impressions on the days :days, with the event files' columns.
SELECT i.impression_id, u.user_id, p.publisher_id, a.advertiser_id, i.ts, i.interaction
FROM impressions AS i
JOIN users AS u ON u.user_key = i.user_key
JOIN publishers AS p ON p.publisher_key = i.publisher_key
JOIN advertisers AS a ON a.advertiser_key = i.advertiser_key
WHERE a.advertiser_id = :advertiser
  AND i.day BETWEEN :first AND :last
  AND array_contains(:days, i.day);
