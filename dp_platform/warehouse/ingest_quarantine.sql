-- Every rejected row of this file: malformed CSV records (`malformed`), rows failing a check
-- or a duplicate (`rejected`), and rows of oversized tie groups (`overflow`). Reasons and row
-- numbers only.
INSERT INTO quarantine
SELECT $load_id, $kind, $source_file, source_row, reason
FROM (
    SELECT source_row, reason FROM malformed
    UNION ALL
    SELECT source_row, reason FROM rejected
    UNION ALL
    SELECT source_row, reason FROM overflow
);

SELECT reason, count(*) AS n
FROM quarantine
WHERE load_id = $load_id
GROUP BY reason
ORDER BY reason;
