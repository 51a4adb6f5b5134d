-- The campaign advertiser's conversions on the days :days, with the event files' columns.
SELECT c.conversion_id, u.user_id, a.advertiser_id, c.ts, c.value
FROM conversions AS c
JOIN users AS u ON u.user_key = c.user_key
JOIN advertisers AS a ON a.advertiser_key = c.advertiser_key
WHERE a.advertiser_id = :advertiser
  AND c.day BETWEEN :first AND :last
  AND array_contains(:days, c.day);
