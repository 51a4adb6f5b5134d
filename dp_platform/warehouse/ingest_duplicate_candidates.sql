-- Duplicate events among this load's rows (view `events`: user_key, id, load_id, source_row of
-- the kind's table; the load's rows are inserted already and passed the row checks). An event
-- is its user and its id: ids come from the advertiser's and publishers' systems and are not
-- unique across users, so the same id under two users is two events (one user's rows may
-- never decide whether another's are kept: docs/privacy.md, "Assumptions and limits").
-- * duplicate_loaded: the user's id was in the warehouse before this load (every copy here);
-- * duplicate_in_load: the user's id repeats within this file; the first copy (lowest row) is
--   kept.
-- Equal (user, id) pairs have equal hashes: sorting the load's 64-bit hashes and comparing
-- neighbours finds the few candidate rows far more cheaply than grouping every pair, and the
-- exact rule then runs on the candidates only (a hash collision is never mistaken for a
-- duplicate): this file finds the candidates within the load,
-- ingest_duplicate_candidates_earlier.sql (run only when the warehouse holds earlier loads of
-- the kind) adds those sharing a hash with earlier loads, and ingest_duplicates.sql applies the
-- exact rule.
CREATE OR REPLACE TEMP TABLE duplicate_candidates AS
SELECT source_row
FROM (
    SELECT
        source_row,
        h,
        lag(h) OVER (ORDER BY h) AS previous,
        lead(h) OVER (ORDER BY h) AS following
    FROM (SELECT source_row, hash(user_key, id) AS h FROM events WHERE load_id = $load_id)
)
WHERE h = previous OR h = following;
