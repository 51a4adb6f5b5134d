-- cell_rows(c, d0, d1): the attributed rows of campaign c, days d0..d1, as entries of the
-- released vector (docs/algorithm.md#cells), keyed by cell_key; cell_positions maps a
-- cell_key to its position in the vector (keys without a position are not released).
-- A count-only campaign without breakdown: the cells are the campaign's publishers
-- (campaign_pubs), cell_key the publisher's key and each row keeps its attribution weight —
-- the same rows and sums, in the same order, as before cells existed (a campaign without a
-- breakdown has no impression dimension: every row's touch is 0).
CREATE OR REPLACE TEMP MACRO cell_rows(c, d0, d1) AS TABLE
SELECT a.day, a.conversion_key, a.user_key, a.user_rank, a.publisher_key AS cell_key, a.weight
FROM attributed_conversions AS a
WHERE a.campaign = c AND a.day BETWEEN d0 AND d1;

CREATE OR REPLACE TEMP TABLE cell_positions AS
SELECT publisher_key AS cell_key, position FROM campaign_pubs;
