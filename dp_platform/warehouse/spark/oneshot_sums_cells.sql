-- One-shot release of a campaign with cells (DuckDB twin: ../oneshot_sums_cells.sql): the
-- bounding of oneshot_sums.sql — post: each user's attributed conversions of the period in
-- (ts, conversion_id) order, the first :whole fully, :fraction of the next, none after; pre:
-- only the user's first :whole conversions of the advertiser in the period count — applied to
-- the conversions' cell entries (view cell_rows over the period, cell_rows.sql: each entry
-- already carries its attribution weight, its measure's scale 1/m and, for values,
-- min(value, cap)/cap), summed by vector position. A conversion's entries are kept or cut
-- together.
WITH
period AS (
    SELECT
        c.conversion_key, c.user_key, c.ts, c.conversion_id,
        row_number() OVER (PARTITION BY c.user_key ORDER BY c.ts, c.conversion_id) - 1 AS any_rank
    FROM conversions AS c
    WHERE c.advertiser_key = (SELECT advertiser_key FROM advertisers WHERE advertiser_id = :advertiser)
      AND c.day BETWEEN :first AND :last
),
attributed AS (
    SELECT p.conversion_key, p.user_key, p.ts, p.conversion_id, p.any_rank
    FROM period AS p
    LEFT SEMI JOIN attributed_conversions AS a
        ON a.conversion_key = p.conversion_key
        AND a.campaign = :campaign AND a.day BETWEEN :first AND :last
),
ranked AS (
    SELECT
        conversion_key,
        any_rank,
        row_number() OVER (PARTITION BY user_key ORDER BY ts, conversion_id) - 1
            AS attributed_rank
    FROM attributed
),
kept AS (
    SELECT
        r.cell_key,
        r.weight * CASE
            WHEN :enforcement = 'pre' THEN CASE WHEN k.any_rank < :whole THEN 1.0D ELSE 0.0D END
            WHEN k.attributed_rank < :whole THEN 1.0D
            WHEN k.attributed_rank = :whole THEN :fraction
            ELSE 0.0D
        END AS amount
    FROM cell_rows AS r
    JOIN ranked AS k ON k.conversion_key = r.conversion_key
)
SELECT cp.position, sum(k.amount) AS value
FROM kept AS k
JOIN cell_positions AS cp ON cp.cell_key = k.cell_key
GROUP BY cp.position
ORDER BY cp.position;
