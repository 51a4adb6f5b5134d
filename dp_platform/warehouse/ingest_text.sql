-- ingest_text(x): a text field as the checks see it, trimmed of Unicode space separators at
-- both ends (DuckDB's trim), an empty result being NULL (missing). trim walks every character
-- of every string; a field that is pure ASCII with no space at either end cannot change, so
-- only the other fields are trimmed (about half the cost of the checks at 5·10⁷ rows).
CREATE OR REPLACE TEMP MACRO ingest_text(x) AS
    CASE
        WHEN x = '' THEN NULL
        WHEN prefix(x, ' ') OR suffix(x, ' ') OR strlen(x) <> length(x) THEN nullif(trim(x), '')
        ELSE x
    END;
