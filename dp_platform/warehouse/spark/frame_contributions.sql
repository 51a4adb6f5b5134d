-- Contribution partitions of the days :days.
SELECT campaign, day, user_key, conversions
FROM user_day_contributions
WHERE campaign = :campaign AND day BETWEEN :first AND :last
  AND array_contains(:days, day);
