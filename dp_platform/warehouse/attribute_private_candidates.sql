-- Private last touch (docs/mechanisms.md), step 1 of 2: every candidate of every conversion of days
-- $first..$last (same user and advertiser, campaign publishers, conv.ts - lookback <= imp.ts <
-- conv.ts: attribution_scope.sql), with its age in hours and a dense index idx that orders
-- the candidates by (conversion_key, ord_key). Python draws one Exp(1) per idx (secure source,
-- data-independent except for the count) and step 2 picks the race's winner per conversion.
-- Conversions whose touch was already drawn (private_touch_choices) are not drawn again.
CREATE OR REPLACE TEMP TABLE private_candidates AS
SELECT
    conversion_key, conversion_id, user_key, day, ts, publisher_key, ord_key,
    touch_of(load_id, source_row) AS touch,
    age_us / 3600000000.0 AS age_hours,
    row_number() OVER (ORDER BY conversion_key, ord_key) - 1 AS idx
FROM scope_candidates($advertiser, $first, $last, $lookback_days, $tie_room)
WHERE conversion_key NOT IN (
    SELECT conversion_key FROM private_touch_choices WHERE campaign = $campaign
);

SELECT count(*) FROM private_candidates;
