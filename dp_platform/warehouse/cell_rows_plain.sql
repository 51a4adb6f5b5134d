-- cell_rows(c, d0, d1): the attributed rows of campaign c, days d0..d1, as entries of the
-- released vector (docs/algorithm.md#cells). A count-only campaign without breakdown: the
-- cells are the campaign's publishers (campaign_pubs) and each row keeps its attribution weight.
CREATE OR REPLACE TEMP MACRO cell_rows(c, d0, d1) AS TABLE
SELECT a.day, a.user_key, a.user_rank, cp.position, a.weight
FROM attributed_conversions AS a
JOIN campaign_pubs AS cp ON cp.publisher_key = a.publisher_key
WHERE a.campaign = c AND a.day BETWEEN d0 AND d1;
