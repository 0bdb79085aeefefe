-- The looks of a gate's more evidence (docs/spec.md#more-evidence): one row per look, the first look included.
CREATE TABLE gate_looks (
    gate_id    BIGINT NOT NULL REFERENCES gates (id) ON DELETE CASCADE,
    look       INTEGER NOT NULL,
    units      TEXT NOT NULL,
    cases      INTEGER NOT NULL,
    attempts   INTEGER NOT NULL,
    cost_usd   DOUBLE PRECISION,
    outcome    TEXT NOT NULL,
    strongest_unit    TEXT,
    strongest_e_value DOUBLE PRECISION,
    PRIMARY KEY (gate_id, look)
);
