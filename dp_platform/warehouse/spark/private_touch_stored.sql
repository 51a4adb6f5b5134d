-- Private last touch: the campaign's stored choices (conversion_key -> publisher_key, touch),
-- drawn once per conversion and kept (DuckDB: the private_touch_choices table, read in place). Only
-- batches the catalog committed count (view `committed_touch_batches`, registered from Python;
-- catalog.py): a batch a crash left uncommitted is never read. Re-run after each commit, so
-- the view lists the files written since.
CREATE OR REPLACE TEMP VIEW stored_touch_choices AS
SELECT s.conversion_key, s.publisher_key, s.touch
FROM private_touch_choices AS s
LEFT SEMI JOIN committed_touch_batches AS b ON b.batch = s.batch
WHERE s.campaign = :campaign;
