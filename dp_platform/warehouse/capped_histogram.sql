-- Histogram of the day's per-user counts capped at Λ = $cap (users above Λ counted at Λ): the
-- input of PrivateQuantile (docs/algorithm.md#bounds), O(Λ) whatever the number of users.
SELECT least(conversions, $cap) AS c, count(*)
FROM user_day_contributions
WHERE campaign = $campaign AND day = $day
GROUP BY c
ORDER BY c;
