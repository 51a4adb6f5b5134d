-- AdsBPC+ secret state (adsbpc_plus.py, privacy/filter.py). Idempotent: run before every use.
--
-- plus_user_spend: per (campaign, day, user) the filter cost ‖c̄‖₂²/(2σ²) of what that day
-- released for the user, and their running spend after it (cumulative, so reading a spend
-- never re-adds floats). Only users with a positive cost have a row. Secret: never shown.
CREATE TABLE IF NOT EXISTS plus_user_spend (
    campaign VARCHAR NOT NULL,
    day DATE NOT NULL,
    user_key INTEGER NOT NULL,
    cost DOUBLE NOT NULL,
    spend DOUBLE NOT NULL
);

-- One row per filtered day: the public parameters it was clipped with. A re-run with the same
-- parameters reuses the stored day (never re-applies it); different parameters are refused.
CREATE TABLE IF NOT EXISTS plus_spend_days (
    campaign VARCHAR NOT NULL,
    day DATE NOT NULL,
    bound DOUBLE NOT NULL,
    sigma DOUBLE NOT NULL,
    cap DOUBLE NOT NULL,
    users BIGINT NOT NULL,
    max_spend DOUBLE NOT NULL
);

-- plus_user_values: per (campaign, day, user, vector position) what the filter kept of the
-- user's day (> 0 only). Written for correlated strategies (plus_filter.sql, $carry), whose
-- later rows carry a user's earlier days through C. Secret: never shown.
CREATE TABLE IF NOT EXISTS plus_user_values (
    campaign VARCHAR NOT NULL,
    day DATE NOT NULL,
    user_key INTEGER NOT NULL,
    position BIGINT NOT NULL,
    value DOUBLE NOT NULL
);

-- plus_remainders: per (campaign, day) what the day's filter clipped off, capped per user:
-- X_t = Σ_u min(c_ut − k_ut, E) (plus_remainder.sql), written with the day's filter when the
-- plan releases it, at the cap E it was computed with. Secret: only a noisy release shows it.
CREATE TABLE IF NOT EXISTS plus_remainders (
    campaign VARCHAR NOT NULL,
    day DATE NOT NULL,
    cap DOUBLE NOT NULL,
    value DOUBLE NOT NULL
);
