-- The dimension values of this load's accepted impressions (view `checked_dimensions`: the
-- passing rows' source_row, dimension, value, staged by the driver's checks), one row per
-- impression and dimension with the value's key, under the impression's day (DuckDB twin:
-- `_insert_dimensions` in ../ingest.py). Only the impressions this load inserts get rows:
-- duplicates never reached new_impressions, and the rows of an oversized tie group
-- (touched_impressions.overflowed, quarantined as too_many_at_instant) are left out.
INSERT INTO impression_dimensions_rows
SELECT n.source_row, s.dimension, d.value_key, n.day, :load_id
FROM checked_dimensions AS s
JOIN touched_impressions AS n
    ON n.load_id = :load_id AND n.source_row = s.source_row AND NOT n.overflowed
JOIN dimension_values AS d ON d.dimension = s.dimension AND d.value = s.value;
