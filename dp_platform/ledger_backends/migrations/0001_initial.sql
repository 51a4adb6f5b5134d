-- The ledger's tables (the schema SQLite ledgers carried as PRAGMA user_version 2).
-- Portable SQL: the same text runs on SQLite and PostgreSQL. Amounts of rho are exact
-- fractions stored as "p/q" text; no column is a floating-point type.
CREATE TABLE IF NOT EXISTS accounts (
    name TEXT PRIMARY KEY,
    rho_cap TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS campaigns (
    name TEXT PRIMARY KEY,
    account TEXT NOT NULL REFERENCES accounts(name),
    planned TEXT NOT NULL,
    days INTEGER NOT NULL,
    declared_json TEXT NOT NULL,
    config_json TEXT NOT NULL,
    plan_json TEXT NOT NULL,
    registered_at TEXT NOT NULL,
    ended_at TEXT
);
CREATE TABLE IF NOT EXISTS campaign_history (
    campaign TEXT NOT NULL REFERENCES campaigns(name),
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    planned_before TEXT,
    planned_after TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS bound_choices (
    campaign TEXT NOT NULL REFERENCES campaigns(name),
    day INTEGER NOT NULL,
    choice_json TEXT NOT NULL,
    secret_state_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (campaign, day)
);
CREATE TABLE IF NOT EXISTS releases (
    campaign TEXT NOT NULL REFERENCES campaigns(name),
    day INTEGER NOT NULL,
    release_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (campaign, day)
);
CREATE TABLE IF NOT EXISTS campaign_releases (
    campaign TEXT NOT NULL REFERENCES campaigns(name),
    kind TEXT NOT NULL,
    release_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (campaign, kind)
);
CREATE TABLE IF NOT EXISTS charges (
    campaign TEXT NOT NULL REFERENCES campaigns(name),
    day INTEGER NOT NULL,
    part TEXT NOT NULL,
    rho TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (campaign, day, part)
);
