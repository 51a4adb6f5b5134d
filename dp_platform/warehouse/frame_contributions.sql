-- Contribution partitions of the days $days ($first..$last bound them).
SELECT campaign, day, user_key, conversions
FROM user_day_contributions
WHERE campaign = $campaign AND day BETWEEN $first AND $last
  AND list_contains($days, day);
