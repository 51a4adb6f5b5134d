-- Last-touch attribution of the conversions of days :first..:last of one campaign (DuckDB
-- twin: ../attribute_lta.sql, an ASOF join there). Spark has no ASOF join: each user's
-- impressions and conversions form one stream ordered by (key, is_touch) — a conversion by its
-- own key epoch_us(ts) * tie_room, an impression by ord_key, a conversion before an impression
-- of equal key — and the running maximum of (ord_key, publisher, touch) at a conversion is the
-- greatest ord_key below its key: the ASOF match. It counts if inside the window
-- (ord_key >= window_key). Weight 1 to its publisher, with its touch (attribution_scope.sql);
-- conversions without a candidate are unattributed.
-- Written as one Delta commit that replaces the range's rows (INSERT … REPLACE WHERE; Delta
-- checks every row written falls inside it).
INSERT INTO attributed_conversions
REPLACE WHERE campaign = :campaign AND day BETWEEN :first AND :last
WITH
stream AS (
    SELECT
        user_key, conv_key AS sort_key, 0 AS is_touch, conversion_key, conversion_id, ts, day,
        window_key,
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
        max(credited) OVER (
            PARTITION BY user_key ORDER BY sort_key, is_touch
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS last_touch
    FROM stream
),
matched AS (
    SELECT conversion_key, conversion_id, user_key, ts, day, last_touch.publisher_key,
        last_touch.touch
    FROM running
    WHERE is_touch = 0 AND last_touch.ord_key >= window_key
)
SELECT
    conversion_key, user_key,
    CAST(row_number() OVER (PARTITION BY user_key, day ORDER BY ts, conversion_id) - 1 AS INT),
    publisher_key, 1.0D, touch, :campaign, day
FROM matched;
