-- Clipped vectors of the days $days ($first..$last bound them).
SELECT campaign, day, bound, position, publisher_id, value
FROM clipped_daily_vectors
WHERE campaign = $campaign AND day BETWEEN $first AND $last
  AND list_contains($days, day);
