-- A key (small integer) for each value of dimension $dimension's public list ($listed) that has
-- none yet: keys are appended, never renumbered, so stored conversions keep their meaning when
-- a catalogue's list grows (docs/data.md#3-warehouse-tables).
INSERT INTO dimension_values
SELECT
    $dimension,
    CAST(
        (SELECT coalesce(max(value_key), -1) FROM dimension_values WHERE dimension = $dimension)
        + row_number() OVER (ORDER BY position) AS SMALLINT
    ),
    value
FROM (SELECT unnest($listed) AS value, generate_subscripts($listed, 1) AS position)
WHERE value NOT IN (SELECT value FROM dimension_values WHERE dimension = $dimension);
