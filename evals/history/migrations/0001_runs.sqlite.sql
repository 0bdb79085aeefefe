-- evalgate history, SQLite (docs/spec.md#history-store): the tables with an identity column (INTEGER PRIMARY KEY is
-- SQLite's). 0001_runs.postgresql.sql has the same columns; 0002_results.sql is shared.

CREATE TABLE schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  TEXT NOT NULL
);

-- One row per results file: a suite run, an imported run, a snapshot of the baseline store.
-- digest identifies the content, so the same run recorded twice (by `run`, then by `gate`) is one row.
CREATE TABLE runs (
    id                INTEGER PRIMARY KEY,
    digest            TEXT NOT NULL UNIQUE,
    suite             TEXT NOT NULL,
    git_sha           TEXT,
    git_ref           TEXT,
    event             TEXT,
    pr_number         INTEGER,
    pr_title          TEXT,
    config_hash       TEXT,
    target_kind       TEXT,
    model             TEXT,
    params            TEXT,
    status            TEXT NOT NULL,
    total_cases       INTEGER NOT NULL,
    completed_cases   INTEGER NOT NULL,
    attempts_per_case INTEGER NOT NULL,
    subset            TEXT,
    shard             TEXT,
    message           TEXT,
    source_format     TEXT,
    started_at        TEXT,
    ended_at          TEXT,
    recorded_at       TEXT NOT NULL,
    recorded_by       TEXT NOT NULL,
    evalgate_version  TEXT
);
CREATE INDEX runs_suite_started ON runs (suite, started_at);

-- A decision about a pair of runs, or an action on the baseline store: action is
-- gate | compare | promote | seed | reset. snapshot_digest names the stored snapshot of a
-- promotion, seed or reset, so `history sync` adds each manifest entry once.
CREATE TABLE gates (
    id               INTEGER PRIMARY KEY,
    action           TEXT NOT NULL CHECK (action IN ('gate', 'compare', 'promote', 'seed', 'reset')),
    suite            TEXT NOT NULL,
    candidate_run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    baseline_run_id  BIGINT REFERENCES runs (id) ON DELETE SET NULL,
    candidate_sha    TEXT,
    baseline_sha     TEXT,
    verdict          TEXT,
    reason           TEXT,
    exit_code        INTEGER,
    actor            TEXT,
    reset_reason     TEXT,
    blessed          INTEGER NOT NULL DEFAULT 0 CHECK (blessed IN (0, 1)),
    drift_ok         INTEGER CHECK (drift_ok IN (0, 1)),
    event            TEXT,
    pr_number        INTEGER,
    snapshot_digest  TEXT,
    created_at       TEXT NOT NULL,
    UNIQUE (action, snapshot_digest)
);
CREATE INDEX gates_candidate ON gates (candidate_run_id);
