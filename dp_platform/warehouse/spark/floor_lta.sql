-- Spark's floor for attribution (floor.py): last touch over the raw event files, the least any
-- Spark attribution of them does — one stream per user ordered by time, the running maximum
-- of the impressions' (ts, publisher) at each conversion (attribute_lta.sql's plan without its
-- keys, scope views or campaign filters). An impression at a conversion's own time does not
-- count (the conversion sorts first, as there); inside :lookback_days or unattributed. A query:
-- floor.py writes it to a scratch table (not one of the engine's commits).
SELECT conversion_id, day, credited.publisher_id AS publisher_id
FROM (
    SELECT
        conversion_id, day, ts,
        max(touch) OVER (
            PARTITION BY user_id ORDER BY ts, is_touch
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS credited
    FROM (
        SELECT user_id, ts, 1 AS is_touch, NULL AS conversion_id, NULL AS day,
            named_struct('ts', ts, 'publisher_id', publisher_id) AS touch
        FROM floor_impression_file
        UNION ALL
        SELECT user_id, ts, 0, conversion_id, day,
            CAST(NULL AS STRUCT<ts: TIMESTAMP, publisher_id: STRING>)
        FROM floor_conversion_file
    )
)
WHERE conversion_id IS NOT NULL
  AND credited.ts >= ts - make_dt_interval(:lookback_days);
