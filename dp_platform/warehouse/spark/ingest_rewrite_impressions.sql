-- The impression days a file touches (:first..:last_day), replaced in one commit by their loaded
-- rows and the file's kept ones (`new_impressions` less `overflow`, from
-- ingest_insert_impressions.sql), each ranked as there: by impression_id among those of the same
-- user and advertiser at the same microsecond, one rank per impression id (dense_rank: the rows
-- of one impression in two loads, at most one of which is ever read, share it). The statement
-- reads the days itself, so another ingest's rewrite of one of them committed meanwhile fails
-- this commit (a conflict) instead of being overwritten, and the rows of ingests that may still
-- commit (a load id after :last) are kept, ranked with the rest so that whichever ingest
-- commits, the ranks read are distinct and in order; rows of loads that never will are dropped
-- here. (Delta takes no array in a REPLACE WHERE, so a day between two touched ones is rewritten
-- too.) No DuckDB twin: DuckDB's ingest is one transaction.
INSERT INTO impressions_rows REPLACE WHERE day BETWEEN :first AND :last_day
SELECT
    impression_id, user_key, publisher_key, advertiser_key, ts, interaction,
    unix_micros(ts) * :tie_room
        + dense_rank() OVER (PARTITION BY user_key, advertiser_key, ts ORDER BY impression_id)
        - 1 AS ord_key,
    load_id, source_row, day
FROM (
    SELECT
        impression_id, user_key, publisher_key, advertiser_key, ts, interaction, load_id,
        source_row, day
    FROM impressions_rows
    WHERE day BETWEEN :first AND :last_day
      AND (load_id > :last OR load_id IN (SELECT load_id FROM loads))
    UNION ALL
    SELECT
        n.impression_id, n.user_key, n.publisher_key, n.advertiser_key, n.ts, n.interaction,
        n.load_id, n.source_row, n.day
    FROM new_impressions AS n
    LEFT ANTI JOIN overflow AS o ON o.source_row = n.source_row
) AS kept;
