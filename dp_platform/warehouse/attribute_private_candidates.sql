-- Private last touch (seed 000 §2), step 1 of 2: every candidate of every conversion of days
-- $first..$last (same user and advertiser, campaign publishers, conv.ts - lookback <= imp.ts <
-- conv.ts, as attribute_touches.sql), with its age in hours and a dense index idx that orders
-- the candidates by (conversion_key, ord_key). Python draws one Exp(1) per idx (secure source,
-- data-independent except for the count) and step 2 picks the race's winner per conversion.
CREATE OR REPLACE TEMP TABLE private_candidates AS
WITH
advertiser AS (
    SELECT advertiser_key FROM advertisers WHERE advertiser_id = $advertiser
),
conv AS (
    SELECT
        c.conversion_key, c.conversion_id, c.user_key, c.ts,
        CAST(c.ts AS DATE) AS day,
        epoch_us(c.ts) * $tie_room AS conv_key
    FROM conversions AS c
    WHERE c.advertiser_key = (SELECT advertiser_key FROM advertiser)
      AND c.ts >= CAST($first AS TIMESTAMP)
      AND c.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY
),
imp AS (
    SELECT i.user_key, i.publisher_key, i.ts, i.ord_key
    FROM impressions AS i
    WHERE i.advertiser_key = (SELECT advertiser_key FROM advertiser)
      AND i.publisher_key IN (SELECT publisher_key FROM campaign_pubs)
      AND i.ts >= CAST($first AS TIMESTAMP) - to_days(CAST($lookback_days AS INTEGER))
      AND i.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY
)
SELECT
    conv.conversion_key, conv.conversion_id, conv.user_key, conv.day, conv.ts,
    imp.publisher_key, imp.ord_key,
    (epoch_us(conv.ts) - epoch_us(imp.ts)) / 3600000000.0 AS age_hours,
    row_number() OVER (ORDER BY conv.conversion_key, imp.ord_key) - 1 AS idx
FROM conv
JOIN imp ON imp.user_key = conv.user_key
WHERE imp.ord_key < conv.conv_key
  AND imp.ts >= conv.ts - to_days(CAST($lookback_days AS INTEGER));

SELECT count(*) FROM private_candidates;
