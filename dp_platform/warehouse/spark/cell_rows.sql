-- View cell_rows: the attributed rows of campaign :campaign, days :first..:last, as entries of
-- the released cell vector (DuckDB twin: ../cell_rows.sql, where the placement is explained;
-- dp_platform/cells.py is the layout), keyed by cell_key = the cell's position. A row credited
-- to publisher p with weight w becomes one entry per measure m at position
-- (p·:combinations + combo)·:measures + m, combo = Σ idx·stride of the conversion's values of
-- the breakdown's conversion dimensions + the row's touch (the same sum over the credited
-- impression's values, recorded by attribution: attribution_touch.sql), weighted w·scale
-- (count) or w·min(value, :value_cap)/:value_cap·scale (value; no value counts 0). A conversion
-- without a listed value for each of the :dimensions conversion dimensions is in no cell, and
-- so, when the breakdown has impression dimensions (:touched), is a row whose touch is NULL;
-- without any, the touch is not read (files written before touches existed read it as NULL).
-- Layout views: campaign_pubs, campaign_measures (measure, value_part, scale),
-- campaign_dim_keys (cell_layout.sql: the conversion dimensions).
-- Speed: each conversion's combination number is summed from that day's conversion_dimensions
-- first (one row per conversion), so the attributed rows need no aggregation after their joins
-- (each is one (conversion, publisher, touch), joined 1:1); the day ranges are static filters
-- on the partitions (no join on day, which would add dynamic-pruning subqueries for nothing).
-- cell_positions (every key is its own position) is registered by the store from Python.
CREATE OR REPLACE TEMP VIEW cell_rows AS
WITH
combos AS (
    SELECT cd.conversion_key, sum(k.idx * k.stride) AS combo, count(*) AS known
    FROM conversion_dimensions AS cd
    JOIN campaign_dim_keys AS k ON k.dimension = cd.dimension AND k.value_key = cd.value_key
    WHERE cd.day BETWEEN :first AND :last
    GROUP BY cd.conversion_key
),
placed AS (
    SELECT
        a.day,
        a.conversion_key,
        a.user_key,
        a.user_rank,
        a.weight,
        cp.position,
        coalesce(d.combo, 0L) + CASE WHEN :touched THEN a.touch ELSE 0 END AS combo,
        coalesce(d.known, 0L) AS known,
        coalesce(v.value, 0.0D) AS value
    FROM attributed_conversions AS a
    JOIN campaign_pubs AS cp ON cp.publisher_key = a.publisher_key
    LEFT JOIN conversions AS v
        ON v.conversion_key = a.conversion_key AND v.day BETWEEN :first AND :last
    LEFT JOIN combos AS d ON d.conversion_key = a.conversion_key
    WHERE a.campaign = :campaign AND a.day BETWEEN :first AND :last
      AND (NOT :touched OR a.touch IS NOT NULL)
)
SELECT
    p.day,
    p.conversion_key,
    p.user_key,
    p.user_rank,
    CAST((p.position * :combinations + p.combo) * :measures + m.measure AS BIGINT) AS cell_key,
    p.weight * m.scale * CASE
        WHEN m.value_part THEN least(greatest(p.value, 0.0D), :value_cap) / :value_cap
        ELSE 1.0D
    END AS weight
FROM placed AS p
CROSS JOIN campaign_measures AS m
WHERE :dimensions = 0 OR p.known = :dimensions;
