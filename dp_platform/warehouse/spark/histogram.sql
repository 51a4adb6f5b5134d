-- Histogram of the day's per-user counts: (count c, users with exactly c), c >= 1, uncapped.
SELECT conversions, count(*)
FROM user_day_contributions
WHERE campaign = :campaign AND day = :day
GROUP BY conversions
ORDER BY conversions;
