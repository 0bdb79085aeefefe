-- Whether an attempt's answer came from the response cache (docs/spec.md#response-cache, `cached: true` in the
-- results file): a cached attempt keeps its first run's tokens and cost, so a reader of the
-- history needs the flag to tell what a run paid from what its answers once cost.
-- NULL for attempts recorded before this column: whether they were cached is not known, and
-- 0 would say they were not.
ALTER TABLE attempts ADD COLUMN cached INTEGER CHECK (cached IN (0, 1));
