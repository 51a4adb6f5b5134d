-- Every quarantined row: reasons and row numbers only (the table is not partitioned by day).
SELECT load_id, kind, source_file, source_row, reason
FROM quarantine;
