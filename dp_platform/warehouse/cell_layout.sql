-- The campaign's cell layout as temp tables for cell_rows.sql (values from the registered
-- config: public). $dim_names/$dim_values/$dim_idx/$dim_strides are parallel lists.
CREATE OR REPLACE TEMP TABLE campaign_shape AS
SELECT
    CAST($dimensions AS INTEGER) AS dimensions,
    CAST($combinations AS BIGINT) AS combinations,
    CAST($measures AS INTEGER) AS measures,
    CAST($value_cap AS DOUBLE) AS value_cap;

CREATE OR REPLACE TEMP TABLE campaign_measures AS
SELECT
    CAST(unnest($measure_index) AS INTEGER) AS measure,
    CAST(unnest($value_part) AS BOOLEAN) AS value_part,
    CAST(unnest($scales) AS DOUBLE) AS scale;

CREATE OR REPLACE TEMP TABLE campaign_dim_keys AS
SELECT l.dimension, d.value_key, l.idx, l.stride
FROM (
    SELECT
        unnest(CAST($dim_names AS VARCHAR[])) AS dimension,
        unnest(CAST($dim_values AS VARCHAR[])) AS value,
        unnest(CAST($dim_idx AS BIGINT[])) AS idx,
        unnest(CAST($dim_strides AS BIGINT[])) AS stride
) AS l
JOIN dimension_values AS d ON d.dimension = l.dimension AND d.value = l.value;
