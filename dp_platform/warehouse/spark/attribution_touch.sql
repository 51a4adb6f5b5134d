-- View impression_touches for a campaign broken down by impression columns (DuckDB twin:
-- ../attribution_touch.sql, its touch_of macro): each impression with its touch, Σ idx·stride
-- over its stored values of the breakdown's impression dimensions (view campaign_touch_list:
-- dimension, value, idx in its list, stride in the cell layout; registered from Python from the
-- registered config — public), NULL unless it has a listed value for every one of the
-- :touch_dimensions dimensions (then its credit is in no cell). Only the impression days
-- attribution_scope.sql reads (:first − :lookback_days .. :last) are looked up.
CREATE OR REPLACE TEMP VIEW impression_touches AS
WITH
keys AS (
    SELECT l.dimension, d.value_key, l.idx, l.stride
    FROM campaign_touch_list AS l
    JOIN dimension_values AS d ON d.dimension = l.dimension AND d.value = l.value
),
touches AS (
    SELECT
        t.day,
        t.load_id,
        t.source_row,
        CASE
            WHEN count(*) = :touch_dimensions THEN CAST(sum(k.idx * k.stride) AS INT)
        END AS touch
    FROM impression_dimensions AS t
    JOIN keys AS k ON k.dimension = t.dimension AND k.value_key = t.value_key
    WHERE t.day BETWEEN date_sub(:first, :lookback_days) AND :last
    GROUP BY t.day, t.load_id, t.source_row
)
SELECT i.*, t.touch
FROM impressions AS i
LEFT JOIN touches AS t
    ON t.day = i.day AND t.load_id = i.load_id AND t.source_row = i.source_row;
