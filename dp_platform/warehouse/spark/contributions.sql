-- Per user and day: the number of the user's attributed conversions (DuckDB twin:
-- ../contributions.sql). user_rank runs 0..c-1 per user-day.
INSERT INTO user_day_contributions
SELECT user_key, CAST(max(user_rank) + 1 AS INT), campaign, day
FROM attributed_conversions
WHERE campaign = :campaign AND day BETWEEN :first AND :last
GROUP BY campaign, day, user_key;
