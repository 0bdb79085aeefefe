-- The looks after the first test per-case means (docs/spec.md#more-evidence): the strongest unit's p-value and
-- the level it needed. Rows recorded before keep their strongest_e_value (the superseded betting e-process)
-- and have NULL here; newer rows leave strongest_e_value NULL.
ALTER TABLE gate_looks ADD COLUMN strongest_p_value DOUBLE PRECISION;
ALTER TABLE gate_looks ADD COLUMN strongest_level DOUBLE PRECISION;
