-- The checked file's fields as the DuckDB checks see them after their casts (DuckDB twin: the
-- `typed` view of ../ingest_check_<kind>.sql): view `source` (built by ingest_checks.py: every
-- record with its source_row and malformed flag, text trimmed as ../ingest_text.sql does, a
-- typed Parquet time already in microseconds) → view `typed`, one row per record with
-- * ts_us: the time in UTC microseconds, parsed from text by DuckDB's own grammar for
--   TRY_CAST(text AS TIMESTAMPTZ) as far as the corpus and its probes found it (a date; a time
--   after T or blanks, seconds and any fraction optional, the fraction cut to microseconds;
--   Z, ±hh, ±hhmm, ±hh:mm[:ss] or one blank and a zone name; 24:00:00 is the next midnight;
--   'epoch'), validated by try_make_timestamp, never by Spark's lenient CAST (which takes
--   '2026', '2026-03' or '1d' where DuckDB does not);
-- * ts_far: a valid time whose year lies outside 1900..2300 (out of range whatever its zone;
--   its date is checked on a year with the same leap rule, so 30 February stays unparsable),
--   or DuckDB's infinities;
-- * value: a number in DuckDB's grammar for TRY_CAST(text AS DOUBLE) (digits with single
--   underscores, optional fraction and exponent; NaN and infinities never pass as finite).
CREATE OR REPLACE TEMP VIEW ts_parts AS
SELECT
    s.*,
    regexp_extract(s.ts_text, r'^\s*(-?\d+)([-/])(\d{1,2})\2(\d{1,2})(?:(?:T|\s+)(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?(Z|[+-]\d\d(?::\d\d(?::\d\d)?|\d\d)?| [A-Za-z][A-Za-z0-9_/+-]*)?\s*)?\z', 0)
        AS ts_match
FROM source AS s;

CREATE OR REPLACE TEMP VIEW ts_fields AS
SELECT
    p.*,
    try_cast(regexp_extract(p.ts_match, r'^\s*(-?\d+)', 1) AS INT) AS ts_year,
    try_cast(regexp_extract(p.ts_match, r'^\s*-?\d+[-/](\d+)', 1) AS INT) AS ts_month,
    try_cast(regexp_extract(p.ts_match, r'^\s*-?\d+[-/]\d+[-/](\d+)', 1) AS INT) AS ts_day,
    coalesce(try_cast(regexp_extract(p.ts_match, r'(?:T|\s)(\d+):', 1) AS INT), 0) AS ts_hour,
    coalesce(try_cast(regexp_extract(p.ts_match, r'(?:T|\s)\d+:(\d+)', 1) AS INT), 0) AS ts_minute,
    coalesce(try_cast(regexp_extract(p.ts_match, r'(?:T|\s)\d+:\d+:(\d+)', 1) AS INT), 0) AS ts_second,
    CAST(rpad(substr(regexp_extract(p.ts_match, r'(?:T|\s)\d+:\d+:\d+\.(\d*)', 1), 1, 6), 6, '0') AS INT) AS ts_micro,
    regexp_extract(p.ts_match, r':\d+(?:\.\d*)?(Z|[+-]\d\d(?::\d\d(?::\d\d)?|\d\d)?| [A-Za-z][A-Za-z0-9_/+-]*)\s*\z', 1) AS ts_zone
FROM ts_parts AS p;

CREATE OR REPLACE TEMP VIEW ts_local AS
SELECT
    f.*,
    unix_micros(try_make_timestamp(
        CASE WHEN f.ts_year BETWEEN 1900 AND 2300 THEN f.ts_year ELSE 2000 + pmod(f.ts_year, 400) END,
        f.ts_month, f.ts_day, 0, 0, 0, 'UTC'
    ))
        + CAST(f.ts_hour AS BIGINT) * 3600000000
        + CAST(f.ts_minute AS BIGINT) * 60000000
        + CAST(f.ts_second AS BIGINT) * 1000000
        + f.ts_micro AS ts_local_us,
    f.ts_minute <= 59 AND f.ts_second <= 59
        AND (f.ts_hour <= 23 OR (f.ts_hour = 24 AND f.ts_minute = 0 AND f.ts_second = 0 AND f.ts_micro = 0))
        AS ts_clock_ok,
    CASE
        WHEN f.ts_zone = '' OR f.ts_zone = 'Z' THEN 0
        WHEN f.ts_zone RLIKE '^[+-]' THEN
            (CASE WHEN f.ts_zone LIKE '-%' THEN -1 ELSE 1 END) * (
                CAST(substr(f.ts_zone, 2, 2) AS BIGINT) * 3600
                + coalesce(try_cast(CASE WHEN length(f.ts_zone) = 5 THEN substr(f.ts_zone, 4, 2) ELSE substr(f.ts_zone, 5, 2) END AS BIGINT), 0) * 60
                + coalesce(try_cast(substr(f.ts_zone, 8, 2) AS BIGINT), 0)
            ) * 1000000
    END AS ts_offset_us,
    z.zone AS ts_zone_id
FROM ts_fields AS f
LEFT JOIN ingest_zones AS z ON f.ts_zone LIKE ' %' AND z.lower_name = lower(substr(f.ts_zone, 2));

CREATE OR REPLACE TEMP VIEW typed AS
SELECT
    l.source_row,
    l.malformed,
    l.digest_a,
    l.digest_b,
    l.id,
    l.user_id,
    l.publisher_id,
    l.advertiser_id,
    l.ts_text IS NOT NULL OR l.ts_typed_us IS NOT NULL AS ts_given,
    CASE
        WHEN l.ts_typed_us IS NOT NULL THEN l.ts_typed_us
        WHEN l.ts_text RLIKE r'^\s*(?i:epoch)\s*\z' THEN 0
        WHEN NOT (l.ts_match <> '' AND l.ts_year BETWEEN -290307 AND 294247 AND l.ts_clock_ok
            AND l.ts_local_us IS NOT NULL
            AND (l.ts_offset_us IS NOT NULL OR l.ts_zone_id IS NOT NULL)) THEN NULL
        WHEN NOT l.ts_year BETWEEN 1900 AND 2300 THEN NULL
        WHEN l.ts_zone_id IS NOT NULL THEN unix_micros(to_utc_timestamp(timestamp_micros(l.ts_local_us), l.ts_zone_id))
        ELSE l.ts_local_us - l.ts_offset_us
    END AS ts_us,
    coalesce(l.ts_text RLIKE r'^\s*(?i:-?infinity)\s*\z', false)
        OR coalesce(
            l.ts_match <> '' AND NOT l.ts_year BETWEEN 1900 AND 2300
            AND l.ts_year BETWEEN -290307 AND 294247 AND l.ts_clock_ok AND l.ts_local_us IS NOT NULL
            AND (l.ts_offset_us IS NOT NULL OR l.ts_zone_id IS NOT NULL),
            false
        ) AS ts_far,
    l.interaction AS interaction_given,
    lower(replace(l.interaction, 'İ', 'I')) AS interaction,
    l.value_text IS NOT NULL OR l.value_typed IS NOT NULL AS value_given,
    coalesce(
        l.value_typed,
        CASE
            WHEN l.value_text RLIKE r'^\s*[+-]?(\d+(_\d+)*(\.(\d+(_\d+)*)?)?|\.\d+(_\d+)*)([eE][+-]?\d+(_\d+)*)?\s*\z'
                THEN CAST(regexp_replace(l.value_text, r'[_\s]', '') AS DOUBLE)
        END
    ) AS value,
    l.dimension_values,
    l.dimension_reason
FROM ts_local AS l;
