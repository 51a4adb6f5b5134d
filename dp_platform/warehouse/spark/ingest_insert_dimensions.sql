-- The dimension values of this load's accepted conversions (view `checked_dimensions`: the
-- passing rows' source_row, dimension, value, from ingest_checks.py), one row per
-- conversion and dimension with the value's key (DuckDB twin: `_insert_dimensions` in
-- ../ingest.py). Rows that are duplicates were not inserted into conversions, so they get none.
INSERT INTO conversion_dimensions_rows
SELECT c.conversion_key, s.dimension, d.value_key, c.day, :load_id
FROM checked_dimensions AS s
JOIN conversions AS c ON c.load_id = :load_id AND c.source_row = s.source_row
JOIN dimension_values AS d ON d.dimension = s.dimension AND d.value = s.value;
