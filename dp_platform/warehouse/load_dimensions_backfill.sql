-- Warehouses made before load_dimensions was kept: a load was ingested with a dimension exactly
-- when its accepted events have rows of it (every accepted event of such a load has one row per
-- dimension; a load that accepted nothing holds no events of any period). Run once (meta key
-- load_dimensions_recorded), inside the opening transaction.
INSERT INTO load_dimensions
SELECT DISTINCT c.load_id, d.dimension
FROM conversion_dimensions AS d
JOIN conversions AS c USING (conversion_key)
UNION
SELECT DISTINCT load_id, dimension
FROM impression_dimensions;
