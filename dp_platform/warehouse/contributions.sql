-- Per user and day: the number of the user's attributed conversions (docs/algorithm.md#data, c_u,i),
-- from the attributed partitions of days $first..$last. user_rank runs 0..c-1 per user-day.
INSERT INTO user_day_contributions
SELECT campaign, day, user_key, CAST(max(user_rank) + 1 AS INTEGER)
FROM attributed_conversions
WHERE campaign = $campaign AND day BETWEEN $first AND $last
GROUP BY campaign, day, user_key
ORDER BY day;
