-- Histogram of the day's per-user counts capped at :cap (users above counted at :cap).
SELECT least(conversions, :cap) AS c, count(*)
FROM user_day_contributions
WHERE campaign = :campaign AND day = :day
GROUP BY least(conversions, :cap)
ORDER BY c;
