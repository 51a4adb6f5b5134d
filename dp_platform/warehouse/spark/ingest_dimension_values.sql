-- A key (small integer) for each value of the catalogue's public lists (view
-- `listed_dimension_values`: dimension, position in its list, value) that has none yet (DuckDB
-- twin: ../ingest_dimension_values.sql, one dimension per call there): keys are appended per
-- dimension in list order after the largest one, never renumbered, so stored conversions keep
-- their meaning when a catalogue's list grows. Tagged with this load (:load_id).
INSERT INTO dimension_values
SELECT
    l.dimension,
    CAST(
        coalesce(k.top, -1) + row_number() OVER (PARTITION BY l.dimension ORDER BY l.position)
        AS SMALLINT
    ),
    l.value,
    :load_id
FROM (
    SELECT n.*
    FROM listed_dimension_values AS n
    LEFT ANTI JOIN dimension_values AS d ON d.dimension = n.dimension AND d.value = n.value
) AS l
LEFT JOIN (
    SELECT dimension, max(value_key) AS top FROM dimension_values GROUP BY dimension
) AS k ON k.dimension = l.dimension;
