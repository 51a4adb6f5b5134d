-- The warehouse a campaign's per-user privacy state lives in (AdsBPC+'s filter spends, private
-- last touch's drawn touches): bound once, at registration or at the first draw after this
-- migration, and checked before every draw, so two homes sharing one ledger cannot keep two
-- diverging copies of that state.
CREATE TABLE IF NOT EXISTS campaign_warehouses (
    campaign TEXT PRIMARY KEY REFERENCES campaigns(name),
    warehouse TEXT NOT NULL,
    bound_at TEXT NOT NULL
);
