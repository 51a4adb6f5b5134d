-- cell_rows(c, d0, d1): the attributed rows of campaign c, days d0..d1, as entries of the
-- released cell vector (docs/algorithm.md#cells; dp_platform/cells.py is the layout), keyed by
-- cell_key = the cell's position (temp table cell_positions).
--
-- A row credited to publisher p with weight w becomes one entry per measure m at position
-- (p·combinations + combo)·measures + m, combo = Σ index·stride of the conversion's dimension
-- values in the campaign's public lists (campaign_dim_keys) + the row's touch (the same sum
-- over the credited impression's values: attribution_touch.sql); its weight is w·scale (count)
-- or w·min(value, cap)/cap·scale (value; a conversion without value counts 0), scale = 1/√m
-- or 1/m for m measures (the mechanism's norm: cells.py). A conversion without a listed value
-- for every conversion dimension of the breakdown is in no cell, and so is a row whose touch
-- is NULL (its impression lacks one). Layout tables (temp, written by store.py from the
-- registered config): campaign_shape (one row: dimensions = the breakdown's conversion
-- dimensions, combinations, measures, value_cap), campaign_measures (measure, value_part,
-- scale), campaign_dim_keys (dimension, value_key, idx, stride; conversion dimensions).
--
-- Speed (docs/scale.md): one pass places each attributed row — its publisher's position, its
-- conversion's value and combination number come from the same joins and one GROUP BY per
-- (row), instead of three passes over a materialised day (the dimension and value lookups each
-- filtered by a semi-join), then the position is arithmetic.
CREATE OR REPLACE TEMP MACRO cell_rows(c, d0, d1) AS TABLE
WITH
placed AS (
    SELECT
        a.day,
        a.conversion_key,
        a.user_key,
        a.user_rank,
        a.weight,
        cp.position,
        coalesce(sum(k.idx * k.stride), 0) + a.touch AS combo,
        count(k.idx) AS known,
        coalesce(any_value(v.value), 0.0) AS value
    FROM attributed_conversions AS a
    JOIN campaign_pubs AS cp ON cp.publisher_key = a.publisher_key
    LEFT JOIN conversions AS v
        ON v.conversion_key = a.conversion_key
        AND v.ts >= d0 AND v.ts < d1 + INTERVAL 1 DAY
    LEFT JOIN conversion_dimensions AS cd ON cd.conversion_key = a.conversion_key
    LEFT JOIN campaign_dim_keys AS k ON k.dimension = cd.dimension AND k.value_key = cd.value_key
    WHERE a.campaign = c AND a.day BETWEEN d0 AND d1 AND a.touch IS NOT NULL
    GROUP BY a.day, a.conversion_key, a.user_key, a.user_rank, a.weight, cp.position, a.touch
)
SELECT
    p.day,
    p.conversion_key,
    p.user_key,
    p.user_rank,
    CAST((p.position * s.combinations + p.combo) * s.measures + m.measure AS BIGINT) AS cell_key,
    p.weight * m.scale * CASE
        WHEN m.value_part THEN least(greatest(p.value, 0.0), s.value_cap) / s.value_cap
        ELSE 1.0
    END AS weight
FROM placed AS p
CROSS JOIN campaign_shape AS s
CROSS JOIN campaign_measures AS m
WHERE s.dimensions = 0 OR p.known = s.dimensions;

-- Every cell is released: a cell's key is its position.
CREATE OR REPLACE TEMP TABLE cell_positions AS
SELECT range AS cell_key, range AS position
FROM range((SELECT count(*) FROM campaign_pubs) * $cells_per_publisher);
