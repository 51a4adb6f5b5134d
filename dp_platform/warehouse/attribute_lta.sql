-- Last-touch attribution of the conversions of days $first..$last (UTC dates) of one campaign.
-- Candidates (attribution_scope.sql): impressions (views and clicks alike) of the same user and
-- advertiser, on the campaign's publishers, with conv.ts - lookback <= imp.ts < conv.ts;
-- impressions before the campaign's start count when inside the window. LTA credits the greatest (ts, impression_id),
-- i.e. the greatest ord_key below the conversion's own key (epoch_us(ts) * tie_room, tie 0):
-- one ASOF join, no many-to-many join. The window's start is checked on keys too
-- (imp.ts >= t  <=>  imp.ord_key >= epoch_us(t) * tie_room), so the join carries 16 bytes a
-- row. Weight 1, and the credited impression's touch (attribution_scope.sql: touch_of);
-- conversions without a candidate are dropped (unattributed). Rows are stored in day order so
-- a day's reads skip the other days' blocks.
INSERT INTO attributed_conversions
WITH
matched AS (
    SELECT conv.*, imp.publisher_key, touch_of(imp.load_id, imp.source_row) AS touch
    FROM scope_windowed_conversions($advertiser, $first, $last, $lookback_days, $tie_room) AS conv
    ASOF JOIN scope_impressions($advertiser, $first, $last, $lookback_days) AS imp
        ON imp.user_key = conv.user_key AND conv.conv_key > imp.ord_key
    WHERE imp.ord_key >= conv.window_key
)
SELECT
    $campaign, day, conversion_key, user_key,
    CAST(row_number() OVER (PARTITION BY user_key, day ORDER BY ts, conversion_id) - 1 AS INTEGER),
    publisher_key, 1.0, touch
FROM matched
ORDER BY day;
