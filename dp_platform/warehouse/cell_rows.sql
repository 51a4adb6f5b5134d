-- cell_rows(c, d0, d1): the attributed rows of campaign c, days d0..d1, as entries of the
-- released cell vector (docs/algorithm.md#cells; dp_platform/cells.py is the layout), keyed by
-- cell_key = the cell's position (temp table cell_positions).
--
-- A row credited to publisher p with weight w becomes one entry per measure m at position
-- (p·combinations + combo)·measures + m, combo = Σ index·stride of the conversion's dimension
-- values in the campaign's public lists (campaign_dim_keys); its weight is w·scale (count) or
-- w·min(value, cap)/cap·scale (value; a conversion without value counts 0), scale = 1/√measures.
-- A conversion without a listed value for every dimension of the breakdown is in no cell.
-- Layout tables (temp, written by store.py from the registered config): campaign_shape (one
-- row: dimensions, combinations, measures, value_cap), campaign_measures (measure, value_part,
-- scale), campaign_dim_keys (dimension, value_key, idx, stride).
CREATE OR REPLACE TEMP MACRO cell_rows(c, d0, d1) AS TABLE
WITH
day_rows AS (
    SELECT a.day, a.conversion_key, a.user_key, a.user_rank, cp.position, a.weight
    FROM attributed_conversions AS a
    JOIN campaign_pubs AS cp ON cp.publisher_key = a.publisher_key
    WHERE a.campaign = c AND a.day BETWEEN d0 AND d1
),
combos AS (
    SELECT cd.conversion_key, sum(k.idx * k.stride) AS combo, count(*) AS known
    FROM conversion_dimensions AS cd
    JOIN campaign_dim_keys AS k ON k.dimension = cd.dimension AND k.value_key = cd.value_key
    WHERE cd.conversion_key IN (SELECT conversion_key FROM day_rows)
    GROUP BY cd.conversion_key
),
valued AS (
    SELECT v.conversion_key, v.value
    FROM conversions AS v
    WHERE v.ts >= d0 AND v.ts < d1 + INTERVAL 1 DAY
      AND v.conversion_key IN (SELECT conversion_key FROM day_rows)
)
SELECT
    r.day,
    r.user_key,
    r.user_rank,
    CAST((r.position * s.combinations + coalesce(k.combo, 0)) * s.measures + m.measure AS BIGINT)
        AS cell_key,
    r.weight * m.scale * CASE
        WHEN m.value_part
            THEN least(greatest(coalesce(v.value, 0.0), 0.0), s.value_cap) / s.value_cap
        ELSE 1.0
    END AS weight
FROM day_rows AS r
CROSS JOIN campaign_shape AS s
CROSS JOIN campaign_measures AS m
LEFT JOIN combos AS k ON k.conversion_key = r.conversion_key
LEFT JOIN valued AS v ON v.conversion_key = r.conversion_key
WHERE s.dimensions = 0 OR k.known = s.dimensions;

-- Every cell is released: a cell's key is its position.
CREATE OR REPLACE TEMP TABLE cell_positions AS
SELECT range AS cell_key, range AS position
FROM range((SELECT count(*) FROM campaign_pubs) * $cells_per_publisher);
