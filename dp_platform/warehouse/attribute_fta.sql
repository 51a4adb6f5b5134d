-- First-touch attribution (see attribute_lta.sql for the candidates). FTA credits the smallest
-- (ts, impression_id) inside the window: the smallest ord_key at or above the window's start
-- key epoch_us(conv.ts - lookback) * tie_room, kept only if it is before the conversion.
INSERT INTO attributed_conversions
WITH
matched AS (
    SELECT conv.*, imp.publisher_key, touch_of(imp.load_id, imp.source_row) AS touch
    FROM scope_windowed_conversions($advertiser, $first, $last, $lookback_days, $tie_room) AS conv
    ASOF JOIN scope_impressions($advertiser, $first, $last, $lookback_days) AS imp
        ON imp.user_key = conv.user_key AND conv.window_key <= imp.ord_key
    WHERE imp.ord_key < conv.conv_key
)
SELECT
    $campaign, day, conversion_key, user_key,
    CAST(row_number() OVER (PARTITION BY user_key, day ORDER BY ts, conversion_id) - 1 AS INTEGER),
    publisher_key, 1.0, touch
FROM matched
ORDER BY day;
