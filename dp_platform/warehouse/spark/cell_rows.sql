-- View cell_rows: the attributed rows of campaign :campaign, days :first..:last, as entries of
-- the released cell vector (DuckDB twin: ../cell_rows.sql, where the placement is explained;
-- dp_platform/cells.py is the layout), keyed by cell_key = the cell's position. A row credited
-- to publisher p with weight w becomes one entry per measure m at position
-- (p·:combinations + combo)·:measures + m, weighted w·scale (count) or
-- w·min(value, :value_cap)/:value_cap·scale (value; no value counts 0); a conversion without a
-- listed value for each of the :dimensions dimensions is in no cell. Layout views: campaign_pubs,
-- campaign_measures (measure, value_part, scale), campaign_dim_keys (cell_layout.sql).
-- The joins to conversions and conversion_dimensions carry the day, so a day's cells read that
-- day's partitions only. cell_positions (every key is its own position) is registered by the
-- store from Python.
CREATE OR REPLACE TEMP VIEW cell_rows AS
WITH
placed AS (
    SELECT
        a.day,
        a.user_key,
        a.user_rank,
        a.weight,
        cp.position,
        coalesce(sum(k.idx * k.stride), 0L) AS combo,
        count(k.idx) AS known,
        coalesce(max(v.value), 0.0D) AS value
    FROM attributed_conversions AS a
    JOIN campaign_pubs AS cp ON cp.publisher_key = a.publisher_key
    LEFT JOIN conversions AS v
        ON v.conversion_key = a.conversion_key
        AND v.day = a.day
        AND v.day BETWEEN :first AND :last
    LEFT JOIN conversion_dimensions AS cd
        ON cd.conversion_key = a.conversion_key
        AND cd.day = a.day
        AND cd.day BETWEEN :first AND :last
    LEFT JOIN campaign_dim_keys AS k ON k.dimension = cd.dimension AND k.value_key = cd.value_key
    WHERE a.campaign = :campaign AND a.day BETWEEN :first AND :last
    GROUP BY a.day, a.conversion_key, a.user_key, a.user_rank, a.weight, cp.position
)
SELECT
    p.day,
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
