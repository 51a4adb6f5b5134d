-- What every attribution rule starts from (DuckDB twin: ../attribution_scope.sql, table macros
-- there; views bound to this call's parameters here):
--   scope_conversions   the advertiser's conversions of days :first..:last (UTC dates), with the
--                       conversion's own ordering key epoch_us(ts) * :tie_room;
--   scope_impressions   the advertiser's impressions on the campaign's publishers (view
--                       `campaign_pubs`) that can fall inside some conversion's look-back window;
--   scope_windowed_conversions
--                       scope_conversions plus window_key = epoch_us(ts - lookback) * :tie_room;
--   scope_candidates    every (conversion, impression) pair of the same user with
--                       conv.ts - lookback <= imp.ts < conv.ts (ties broken by ord_key).
-- Impressions come with their touch (attributed_conversions.touch) from view
-- `impression_touches`, put in scope first: the constant 0 for a campaign without impression
-- dimensions (impression_touches_plain.sql), else each impression's combination number
-- (attribution_touch.sql; DuckDB's touch_of macro).
-- Events are partitioned by UTC day, so the ranges are day filters (partition pruning).
CREATE OR REPLACE TEMP VIEW scope_conversions AS
SELECT
    c.conversion_key, c.conversion_id, c.user_key, c.ts, c.day,
    unix_micros(c.ts) * :tie_room AS conv_key
FROM conversions AS c
WHERE c.advertiser_key = (SELECT advertiser_key FROM advertisers WHERE advertiser_id = :advertiser)
  AND c.day BETWEEN :first AND :last;

CREATE OR REPLACE TEMP VIEW scope_impressions AS
SELECT i.user_key, i.publisher_key, i.ts, i.ord_key, i.touch
FROM impression_touches AS i
WHERE i.advertiser_key = (SELECT advertiser_key FROM advertisers WHERE advertiser_id = :advertiser)
  AND i.publisher_key IN (SELECT publisher_key FROM campaign_pubs)
  AND i.day BETWEEN date_sub(:first, :lookback_days) AND :last;

CREATE OR REPLACE TEMP VIEW scope_windowed_conversions AS
SELECT
    *,
    (unix_micros(ts) - CAST(:lookback_days AS BIGINT) * 86400000000) * :tie_room AS window_key
FROM scope_conversions;

CREATE OR REPLACE TEMP VIEW scope_candidates AS
SELECT
    conv.conversion_key, conv.conversion_id, conv.user_key, conv.day, conv.ts,
    imp.publisher_key, imp.ord_key, imp.touch,
    unix_micros(conv.ts) - unix_micros(imp.ts) AS age_us
FROM scope_conversions AS conv
JOIN scope_impressions AS imp
    ON imp.user_key = conv.user_key
WHERE imp.ord_key < conv.conv_key
  AND unix_micros(imp.ts) >= unix_micros(conv.ts) - CAST(:lookback_days AS BIGINT) * 86400000000;
