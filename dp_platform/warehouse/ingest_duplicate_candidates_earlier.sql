-- Rows of this load whose (user, id) hash is also the hash of an event loaded earlier
-- (candidates for duplicate_loaded; see ingest_duplicate_candidates.sql). Skipped when nothing
-- was loaded before, so a first load never hashes its events twice.
INSERT INTO duplicate_candidates
SELECT source_row
FROM (
    SELECT source_row, hash(user_key, id) AS h FROM events WHERE load_id = $load_id
) AS mine
SEMI JOIN (SELECT hash(user_key, id) AS h FROM events WHERE load_id <> $load_id) AS earlier
    ON earlier.h = mine.h;
