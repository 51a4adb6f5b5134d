-- The campaign's breakdown keys (DuckDB twin: ../cell_layout.sql): each listed value of the
-- registered config (view `campaign_dim_list`: dimension, value, idx in its list, stride,
-- registered from Python — public) with its stored key. The other layout facts (measures:
-- view `campaign_measures`; the shape: parameters of cell_rows.sql) need no warehouse table.
CREATE OR REPLACE TEMP VIEW campaign_dim_keys AS
SELECT l.dimension, d.value_key, l.idx, l.stride
FROM campaign_dim_list AS l
JOIN dimension_values AS d ON d.dimension = l.dimension AND d.value = l.value;
