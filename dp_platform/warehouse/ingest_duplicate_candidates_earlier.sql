-- Rows of this load whose id hash is also the hash of an id loaded earlier (candidates for
-- duplicate_loaded; see ingest_duplicate_candidates.sql). Skipped when nothing was loaded
-- before, so a first load never hashes its ids twice.
INSERT INTO duplicate_candidates
SELECT source_row
FROM (SELECT source_row, hash(id) AS h FROM events WHERE load_id = $load_id) AS mine
SEMI JOIN (SELECT hash(id) AS h FROM events WHERE load_id <> $load_id) AS earlier
    ON earlier.h = mine.h;
