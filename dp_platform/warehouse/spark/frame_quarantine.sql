-- Every quarantined row: reasons and row numbers only.
SELECT load_id, kind, source_file, source_row, reason
FROM quarantine;
