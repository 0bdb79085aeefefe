-- evalgate history, both engines (BIGINT is an INTEGER in SQLite): what a run and a gate hold.

CREATE TABLE unit_results (
    gate_id     BIGINT NOT NULL REFERENCES gates (id) ON DELETE CASCADE,
    unit        TEXT NOT NULL,
    slice_key   TEXT,
    slice_value TEXT,
    metric      TEXT NOT NULL,
    direction   TEXT NOT NULL,
    baseline    DOUBLE PRECISION,
    candidate   DOUBLE PRECISION,
    delta       DOUBLE PRECISION,
    tolerance   DOUBLE PRECISION,
    ci_low      DOUBLE PRECISION,
    ci_high     DOUBLE PRECISION,
    p_value     DOUBLE PRECISION,
    p_adjusted  DOUBLE PRECISION,
    mde         DOUBLE PRECISION,
    n           INTEGER NOT NULL,
    blocking    INTEGER NOT NULL CHECK (blocking IN (0, 1)),
    verdict     TEXT NOT NULL,
    method      TEXT,
    PRIMARY KEY (gate_id, metric, unit)
);

CREATE TABLE cases (
    run_id           BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    case_no          INTEGER NOT NULL,
    case_id          TEXT NOT NULL,
    case_hash        TEXT,
    input_excerpt    TEXT,
    expected_excerpt TEXT,
    PRIMARY KEY (run_id, case_no),
    UNIQUE (run_id, case_id)
);

-- A case's slice values (its tags), one row per key: what every per-slice view groups by.
CREATE TABLE case_slices (
    run_id      BIGINT NOT NULL,
    case_no     INTEGER NOT NULL,
    slice_key   TEXT NOT NULL,
    slice_value TEXT NOT NULL,
    PRIMARY KEY (run_id, case_no, slice_key),
    FOREIGN KEY (run_id, case_no) REFERENCES cases (run_id, case_no) ON DELETE CASCADE
);

CREATE TABLE attempts (
    run_id           BIGINT NOT NULL,
    case_no          INTEGER NOT NULL,
    attempt_no       INTEGER NOT NULL,
    passed           INTEGER CHECK (passed IN (0, 1)),
    score            DOUBLE PRECISION,
    scores           TEXT,
    format_valid     DOUBLE PRECISION,
    latency_ms       DOUBLE PRECISION,
    tokens_in        INTEGER,
    tokens_out       INTEGER,
    cost_usd         DOUBLE PRECISION,
    error_kind       TEXT CHECK (error_kind IN ('infra', 'target', 'scorer', 'timeout')),
    error_message    TEXT,
    retries          INTEGER NOT NULL DEFAULT 0,
    output_excerpt   TEXT,
    output_sha256    TEXT,
    output_truncated INTEGER NOT NULL DEFAULT 0 CHECK (output_truncated IN (0, 1)),
    PRIMARY KEY (run_id, case_no, attempt_no),
    FOREIGN KEY (run_id, case_no) REFERENCES cases (run_id, case_no) ON DELETE CASCADE
);

-- Attempt traces (docs/spec.md#traces). A tool_call names the seq and kind of its answer; the foreign key
-- (checked at commit) refuses a call whose tool_result/tool_error is not there. The largest table
-- by far (20 events per attempt is common), so it has no foreign key to attempts: every such
-- check costs as much as the insert (the writer adds events only with their attempt).
CREATE TABLE events (
    run_id      BIGINT NOT NULL,
    case_no     INTEGER NOT NULL,
    attempt_no  INTEGER NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq >= 0),
    kind        TEXT NOT NULL CHECK (kind IN ('message', 'tool_call', 'tool_result', 'tool_error', 'decision', 'log')),
    name        TEXT,
    content     TEXT,
    sha256      TEXT,
    truncated   INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
    ts          TEXT,
    result_seq  INTEGER,
    result_kind TEXT,
    PRIMARY KEY (run_id, case_no, attempt_no, seq),
    UNIQUE (run_id, case_no, attempt_no, seq, kind),
    CHECK ((kind = 'tool_call') = (result_seq IS NOT NULL AND result_kind IS NOT NULL)),
    CHECK (result_seq IS NULL OR (result_seq > seq AND result_kind IN ('tool_result', 'tool_error'))),
    FOREIGN KEY (run_id, case_no, attempt_no, result_seq, result_kind)
        REFERENCES events (run_id, case_no, attempt_no, seq, kind) DEFERRABLE INITIALLY DEFERRED
);
CREATE UNIQUE INDEX events_one_call_per_result ON events (run_id, case_no, attempt_no, result_seq)
    WHERE result_seq IS NOT NULL;
