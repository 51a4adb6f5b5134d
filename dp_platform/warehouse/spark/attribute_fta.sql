-- First-touch attribution (DuckDB twin: ../attribute_fta.sql): the smallest ord_key at or above
-- the conversion's window start key, kept only if below the conversion's own key. The mirror
-- of attribute_lta.sql: the stream runs backwards, a conversion keyed by its window_key after
-- the impressions of equal key, and the running minimum of (ord_key, publisher, touch) is the
-- match: its publisher and touch (attribution_scope.sql) are credited.
-- Written as one Delta commit that replaces the range's rows (INSERT … REPLACE WHERE; Delta
-- checks every row written falls inside it).
INSERT INTO attributed_conversions
REPLACE WHERE campaign = :campaign AND day BETWEEN :first AND :last
WITH
stream AS (
    SELECT
        user_key, window_key AS sort_key, 0 AS is_touch, conversion_key, conversion_id, ts, day,
        conv_key,
        CAST(NULL AS STRUCT<ord_key: BIGINT, publisher_key: INT, touch: INT>) AS credited
    FROM scope_windowed_conversions
    UNION ALL
    SELECT
        user_key, ord_key, 1, NULL, NULL, NULL, NULL, NULL,
        named_struct('ord_key', ord_key, 'publisher_key', publisher_key, 'touch', touch)
    FROM scope_impressions
),
running AS (
    SELECT
        *,
        min(credited) OVER (
            PARTITION BY user_key ORDER BY sort_key DESC, is_touch DESC
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS first_touch
    FROM stream
),
matched AS (
    SELECT conversion_key, conversion_id, user_key, ts, day, first_touch.publisher_key,
        first_touch.touch
    FROM running
    WHERE is_touch = 0 AND first_touch.ord_key < conv_key
)
SELECT
    conversion_key, user_key,
    CAST(row_number() OVER (PARTITION BY user_key, day ORDER BY ts, conversion_id) - 1 AS INT),
    publisher_key, 1.0D, touch, :campaign, day
FROM matched;
