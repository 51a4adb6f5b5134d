-- Private last touch, step 3 of 3 (DuckDB twin: the second statement of
-- ../attribute_private_select.sql): every conversion of the range with a stored choice (view
-- `stored_touch_choices`, re-listed after step 2's commit) is attributed from it: weight 1 to
-- the chosen publisher with its touch, user_rank as in attribute_lta.sql. A campaign without
-- impression dimensions (:touched false) has touch 0 (choices stored before touches existed
-- read NULL). A re-run returns the same rows and draws nothing for conversions drawn before.
-- Written as one Delta commit that replaces the range's rows (INSERT … REPLACE WHERE; Delta
-- checks every row written falls inside it).
INSERT INTO attributed_conversions
REPLACE WHERE campaign = :campaign AND day BETWEEN :first AND :last
SELECT
    conv.conversion_key, conv.user_key,
    CAST(
        row_number() OVER (PARTITION BY conv.user_key, conv.day ORDER BY conv.ts, conv.conversion_id)
        - 1 AS INT
    ),
    chosen.publisher_key, 1.0D, CASE WHEN :touched THEN chosen.touch ELSE 0 END, :campaign,
    conv.day
FROM scope_conversions AS conv
JOIN stored_touch_choices AS chosen ON chosen.conversion_key = conv.conversion_key;
