-- First-touch attribution (see attribute_lta.sql for the candidates). FTA credits the smallest
-- (ts, impression_id) inside the window: the smallest ord_key at or above the window's start
-- key epoch_us(conv.ts - lookback) * tie_room, kept only if it is before the conversion.
INSERT INTO attributed_conversions
WITH
conv AS (
    SELECT
        *,
        epoch_us(ts - to_days(CAST($lookback_days AS INTEGER))) * $tie_room AS window_key
    FROM scope_conversions($advertiser, $first, $last, $tie_room)
),
imp AS (
    SELECT user_key, publisher_key, ord_key
    FROM scope_impressions($advertiser, $first, $last, $lookback_days)
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
