-- Private last touch: the campaign's stored choices (conversion_key -> publisher_key, touch),
-- drawn once per conversion and kept (DuckDB: the private_touch_choices table, read in place).
-- Each batch is one Delta commit, so a batch a crash cut is not there at all.
CREATE OR REPLACE TEMP VIEW stored_touch_choices AS
SELECT s.conversion_key, s.publisher_key, s.touch
FROM private_touch_choices AS s
WHERE s.campaign = :campaign;
