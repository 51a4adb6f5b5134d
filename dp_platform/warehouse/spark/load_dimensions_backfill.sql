-- Each load's dimensions as its dimension rows show them, for a catalog made before it kept
-- them (DuckDB's load_dimensions_backfill.sql): both dimension tables carry their load.
SELECT DISTINCT load_id, dimension FROM conversion_dimensions
UNION
SELECT DISTINCT load_id, dimension FROM impression_dimensions;
