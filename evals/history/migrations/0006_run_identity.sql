-- What a run ran, beyond its commit (docs/spec.md#repeated-runs): only runs of the same commit with a
-- clean tree, the same case set and target definition repeat the same code, so flip rates read them.
-- git_dirty: tracked files differed from git_sha (the results file's run.git_dirty); case_set: the
-- sha256 of the run's sorted case ids with their hashes. NULL for runs recorded before these
-- columns: what they ran is not known, so they are never repeats.
ALTER TABLE runs ADD COLUMN git_dirty INTEGER CHECK (git_dirty IN (0, 1));
ALTER TABLE runs ADD COLUMN case_set TEXT;
