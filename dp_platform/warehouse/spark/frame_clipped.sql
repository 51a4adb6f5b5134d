-- Clipped vectors of the days :days.
SELECT campaign, day, bound, position, publisher_id, value
FROM clipped_daily_vectors
WHERE campaign = :campaign AND day BETWEEN :first AND :last
  AND array_contains(:days, day);
