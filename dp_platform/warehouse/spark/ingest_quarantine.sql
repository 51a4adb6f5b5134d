-- Every rejected row of this file (DuckDB twin: ../ingest_quarantine.sql): malformed CSV
-- records (`malformed`), rows failing a check (`checked`), rows of oversized tie groups
-- (`overflow`). Reasons and row numbers only.
INSERT INTO quarantine_rows
SELECT :kind, :source_file, source_row, reason, :load_id
FROM (
    SELECT source_row, reason FROM malformed
    UNION ALL
    SELECT source_row, reason FROM checked WHERE reason IS NOT NULL
    UNION ALL
    SELECT source_row, reason FROM overflow
);

SELECT reason, count(*) AS n
FROM quarantine
WHERE load_id = :load_id
GROUP BY reason
ORDER BY reason;
