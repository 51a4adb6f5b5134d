-- Surrogate keys for ids seen for the first time among the rows that passed the row checks
-- (view `checked_raw`, before the duplicate check, as DuckDB's keys come from its check's scan:
-- an id seen only in a duplicate row gets a key too); new keys continue after the largest
-- existing one, in id order — the same keys DuckDB gives (../ingest_keys.sql). Rows are tagged
-- with this load (:load_id). Key tables are read whole (visibility.py): a key once written is
-- its id's key whether or not its ingest committed, and each statement reads its own table, so
-- another ingest's keys appended meanwhile fail it (a conflict) rather than give an id two keys.
INSERT INTO users
SELECT
    CAST((SELECT coalesce(max(user_key), -1) FROM users) + row_number() OVER (ORDER BY n.user_id) AS INT),
    n.user_id,
    :load_id
FROM (SELECT DISTINCT user_id FROM checked_raw WHERE reason IS NULL) AS n
LEFT ANTI JOIN users AS u ON u.user_id = n.user_id;

INSERT INTO publishers
SELECT
    CAST(
        (SELECT coalesce(max(publisher_key), -1) FROM publishers)
            + row_number() OVER (ORDER BY n.publisher_id)
        AS INT
    ),
    n.publisher_id,
    :load_id
FROM (
    SELECT DISTINCT publisher_id FROM checked_raw WHERE reason IS NULL AND publisher_id IS NOT NULL
) AS n
LEFT ANTI JOIN publishers AS p ON p.publisher_id = n.publisher_id;

INSERT INTO advertisers
SELECT
    CAST(
        (SELECT coalesce(max(advertiser_key), -1) FROM advertisers)
            + row_number() OVER (ORDER BY n.advertiser_id)
        AS INT
    ),
    n.advertiser_id,
    :load_id
FROM (SELECT DISTINCT advertiser_id FROM checked_raw WHERE reason IS NULL) AS n
LEFT ANTI JOIN advertisers AS a ON a.advertiser_id = n.advertiser_id;
