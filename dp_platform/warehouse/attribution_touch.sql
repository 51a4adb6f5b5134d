-- The credited impression's touch for a campaign broken down by impression columns
-- (docs/algorithm.md#cells): run after attribution_scope.sql, it replaces touch_of.
-- campaign_touch_keys: for each impression dimension of the breakdown, the keys of its public
-- values with their index in the list and the dimension's stride in the cell layout
-- ($dim_names/$dim_values/$dim_idx/$dim_strides are parallel lists; values from the registered
-- config: public). An impression's touch is Σ idx·stride over its values, NULL unless it has a
-- listed value for every one of the $touch_dimensions dimensions (then its credit is in no
-- cell). touch_of is a correlated subquery: DuckDB looks up only the impressions a rule reads.
CREATE OR REPLACE TEMP TABLE campaign_touch_keys AS
SELECT l.dimension, d.value_key, l.idx, l.stride
FROM (
    SELECT
        unnest(CAST($dim_names AS VARCHAR[])) AS dimension,
        unnest(CAST($dim_values AS VARCHAR[])) AS value,
        unnest(CAST($dim_idx AS BIGINT[])) AS idx,
        unnest(CAST($dim_strides AS BIGINT[])) AS stride
) AS l
JOIN dimension_values AS d ON d.dimension = l.dimension AND d.value = l.value;

CREATE OR REPLACE TEMP TABLE campaign_touch_shape AS
SELECT CAST($touch_dimensions AS BIGINT) AS dimensions;

CREATE OR REPLACE TEMP MACRO touch_of(load_id_, source_row_) AS (
    SELECT CASE
        WHEN count(*) = any_value(s.dimensions) THEN CAST(sum(k.idx * k.stride) AS INTEGER)
    END
    FROM impression_dimensions AS d
    JOIN campaign_touch_keys AS k ON k.dimension = d.dimension AND k.value_key = d.value_key
    CROSS JOIN campaign_touch_shape AS s
    WHERE d.load_id = load_id_ AND d.source_row = source_row_
);
