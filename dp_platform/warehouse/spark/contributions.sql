-- Per user and day: the number of the user's attributed conversions (DuckDB twin:
-- ../contributions.sql). user_rank runs 0..c-1 per user-day.
-- Written as one Delta commit that replaces the range's rows (INSERT … REPLACE WHERE; Delta
-- checks every row written falls inside it).
INSERT INTO user_day_contributions
REPLACE WHERE campaign = :campaign AND day BETWEEN :first AND :last
SELECT user_key, CAST(max(user_rank) + 1 AS INT), campaign, day
FROM attributed_conversions
WHERE campaign = :campaign AND day BETWEEN :first AND :last
GROUP BY campaign, day, user_key;
