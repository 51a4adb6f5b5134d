-- Rows that passed the row checks into the warehouse, with their ordering key as if no two
-- impressions shared an instant (ingest_ties.sql fixes the few that do, after
-- ingest_duplicates.sql took out repeated ids, all inside the same transaction). ts is stored
-- as UTC wall time through epoch_us (no time-zone library call per row).
INSERT INTO impressions
SELECT
    v.id, u.user_key, p.publisher_key, a.advertiser_key, make_timestamp(epoch_us(v.ts)),
    v.interaction, epoch_us(v.ts) * $tie_room, $load_id, v.source_row
FROM typed AS v
ANTI JOIN rejected AS r ON r.source_row = v.source_row
JOIN users AS u ON u.user_id = v.user_id
JOIN publishers AS p ON p.publisher_id = v.publisher_id
JOIN advertisers AS a ON a.advertiser_id = v.advertiser_id;
