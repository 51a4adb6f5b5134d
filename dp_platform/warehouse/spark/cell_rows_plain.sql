-- View cell_rows: the attributed rows of campaign :campaign, days :first..:last, as entries of
-- the released vector, keyed by cell_key; view cell_positions maps a cell_key to its position
-- (keys without a position are not released). DuckDB twin: ../cell_rows_plain.sql. A
-- count-only campaign without breakdown: the cells are the campaign's publishers
-- (campaign_pubs), cell_key the publisher's key, each row keeps its attribution weight — the
-- rows and sums the Spark engine released before cells existed.
CREATE OR REPLACE TEMP VIEW cell_rows AS
SELECT
    a.day, a.conversion_key, a.user_key, a.user_rank, a.publisher_key AS cell_key, a.weight
FROM attributed_conversions AS a
WHERE a.campaign = :campaign AND a.day BETWEEN :first AND :last;

CREATE OR REPLACE TEMP VIEW cell_positions AS
SELECT publisher_key AS cell_key, position FROM campaign_pubs;
