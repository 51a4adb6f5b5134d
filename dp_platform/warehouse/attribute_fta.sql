-- First-touch attribution (see attribute_lta.sql for the candidates). FTA credits the smallest
-- (ts, impression_id) inside the window: the smallest ord_key at or above the window's start
-- key epoch_us(conv.ts - lookback) * tie_room, kept only if it is before the conversion.
INSERT INTO attributed_conversions
WITH
advertiser AS (
    SELECT advertiser_key FROM advertisers WHERE advertiser_id = $advertiser
),
conv AS (
    SELECT
        c.conversion_key, c.conversion_id, c.user_key, c.ts,
        CAST(c.ts AS DATE) AS day,
        epoch_us(c.ts - to_days(CAST($lookback_days AS INTEGER))) * $tie_room AS window_key,
        epoch_us(c.ts) * $tie_room AS conv_key
    FROM conversions AS c
    WHERE c.advertiser_key = (SELECT advertiser_key FROM advertiser)
      AND c.ts >= CAST($first AS TIMESTAMP)
      AND c.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY
),
imp AS (
    SELECT i.user_key, i.publisher_key, i.ord_key
    FROM impressions AS i
    WHERE i.advertiser_key = (SELECT advertiser_key FROM advertiser)
      AND i.publisher_key IN (SELECT publisher_key FROM campaign_pubs)
      AND i.ts >= CAST($first AS TIMESTAMP) - to_days(CAST($lookback_days AS INTEGER))
      AND i.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY
),
matched AS (
    SELECT conv.*, imp.publisher_key
    FROM conv
    ASOF JOIN imp ON imp.user_key = conv.user_key AND conv.window_key <= imp.ord_key
    WHERE imp.ord_key < conv.conv_key
)
SELECT
    $campaign, day, conversion_key, user_key,
    CAST(row_number() OVER (PARTITION BY user_key, day ORDER BY ts, conversion_id) - 1 AS INTEGER),
    publisher_key, 1.0
FROM matched
ORDER BY day;
