-- View impression_touches for a campaign without impression dimensions (DuckDB twin: the
-- constant touch_of of ../attribution_scope.sql): every impression with touch 0, so the
-- attribution reads no dimension table.
CREATE OR REPLACE TEMP VIEW impression_touches AS
SELECT i.*, CAST(0 AS INT) AS touch
FROM impressions AS i;
