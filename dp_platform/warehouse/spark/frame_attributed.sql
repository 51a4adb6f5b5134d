-- Attributed partitions of the days :days, with string ids: for schema checks only.
SELECT
    x.campaign, x.day, c.conversion_id, x.user_key, x.user_rank, p.publisher_id, x.weight,
    x.touch
FROM attributed_conversions AS x
JOIN conversions AS c ON c.conversion_key = x.conversion_key AND c.day = x.day
JOIN publishers AS p ON p.publisher_key = x.publisher_key
WHERE x.campaign = :campaign AND x.day BETWEEN :first AND :last
  AND array_contains(:days, x.day);
