-- What every attribution rule starts from, in one place (table macros, inlined by DuckDB's
-- planner, so each rule's query is optimised as if written out):
--   scope_conversions   the advertiser's conversions of days first_..last_ (UTC dates), with the
--                       conversion's own ordering key epoch_us(ts) * tie_room_;
--   scope_impressions   the advertiser's impressions on the campaign's publishers (temp table
--                       `campaign_pubs`) that can fall inside some conversion's look-back
--                       window — views and clicks alike, from before the campaign's start too;
--   scope_windowed_conversions
--                       scope_conversions plus window_key = epoch_us(ts − lookback) * tie_room_,
--                       the smallest impression ord_key inside the conversion's window;
--   scope_candidates    every (conversion, impression) pair of the same user with
--                       conv.ts − lookback ≤ imp.ts < conv.ts (ties broken by ord_key, i.e.
--                       (ts, impression_id)), for the multi-touch and private rules;
--   touch_of(load_id, source_row)
--                       the credited impression's touch (attributed_conversions.touch): 0
--                       here, for a campaign without impression dimensions — the arguments
--                       are then never read, so no rule carries them; attribution_touch.sql
--                       replaces it for a campaign broken down by impression columns.
-- LTA and FTA use the first two with an ASOF join instead of materialising the pairs.
CREATE OR REPLACE TEMP MACRO scope_conversions(advertiser_id_, first_, last_, tie_room_) AS TABLE
    SELECT
        c.conversion_key, c.conversion_id, c.user_key, c.ts,
        CAST(c.ts AS DATE) AS day,
        epoch_us(c.ts) * tie_room_ AS conv_key
    FROM conversions AS c
    WHERE c.advertiser_key = (
            SELECT advertiser_key FROM advertisers WHERE advertiser_id = advertiser_id_
        )
      AND c.ts >= CAST(first_ AS TIMESTAMP)
      AND c.ts < CAST(last_ AS TIMESTAMP) + INTERVAL 1 DAY;

CREATE OR REPLACE TEMP MACRO scope_impressions(advertiser_id_, first_, last_, lookback_days_) AS TABLE
    SELECT i.user_key, i.publisher_key, i.ts, i.ord_key, i.load_id, i.source_row
    FROM impressions AS i
    WHERE i.advertiser_key = (
            SELECT advertiser_key FROM advertisers WHERE advertiser_id = advertiser_id_
        )
      AND i.publisher_key IN (SELECT publisher_key FROM campaign_pubs)
      AND i.ts >= CAST(first_ AS TIMESTAMP) - to_days(CAST(lookback_days_ AS INTEGER))
      AND i.ts < CAST(last_ AS TIMESTAMP) + INTERVAL 1 DAY;

CREATE OR REPLACE TEMP MACRO scope_windowed_conversions(
    advertiser_id_, first_, last_, lookback_days_, tie_room_
) AS TABLE
    SELECT
        *,
        epoch_us(ts - to_days(CAST(lookback_days_ AS INTEGER))) * tie_room_ AS window_key
    FROM scope_conversions(advertiser_id_, first_, last_, tie_room_);

CREATE OR REPLACE TEMP MACRO scope_candidates(
    advertiser_id_, first_, last_, lookback_days_, tie_room_
) AS TABLE
    SELECT
        conv.conversion_key, conv.conversion_id, conv.user_key, conv.day, conv.ts,
        imp.publisher_key, imp.ord_key, imp.load_id, imp.source_row,
        epoch_us(conv.ts) - epoch_us(imp.ts) AS age_us
    FROM scope_conversions(advertiser_id_, first_, last_, tie_room_) AS conv
    JOIN scope_impressions(advertiser_id_, first_, last_, lookback_days_) AS imp
        ON imp.user_key = conv.user_key
    WHERE imp.ord_key < conv.conv_key
      AND imp.ts >= conv.ts - to_days(CAST(lookback_days_ AS INTEGER));

CREATE OR REPLACE TEMP MACRO touch_of(load_id_, source_row_) AS CAST(0 AS INTEGER);
