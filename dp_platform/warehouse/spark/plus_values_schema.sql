-- AdsBPC+ per-user kept values of a correlated strategy (secret; DuckDB: ../plus_schema.sql's
-- plus_user_values): per (campaign, day, user, vector position) what the filter kept of the
-- user's day, > 0 only. Which days count is plus_spend_days' record of filtered days.
CREATE TABLE IF NOT EXISTS plus_user_values (
    user_key INT, position BIGINT, value DOUBLE, campaign STRING, day DATE
) USING delta PARTITIONED BY (campaign, day) LOCATION '{{root}}/plus_user_values';
