-- Metrics per run and unit ("overall" and every slice value), for both engines: one SQL text,
-- kept to what SQLite and PostgreSQL evaluate alike (casts to DOUBLE PRECISION, no engine
-- functions; percentiles by nearest rank over window functions). Tests compare both engines.
-- The aggregates compute "overall" and the slices in two branches joined to case_slices by its
-- key: 3x faster on SQLite than grouping a union of every case's units (measured, 200 runs).

-- Every case once as "overall" and once per slice value ("language=ko").
CREATE VIEW case_units AS
SELECT run_id, case_no, CAST('overall' AS TEXT) AS unit, CAST(NULL AS TEXT) AS slice_key,
       CAST(NULL AS TEXT) AS slice_value
FROM cases
UNION ALL
SELECT run_id, case_no, slice_key || '=' || slice_value, slice_key, slice_value
FROM case_slices;

-- One value per case (docs/spec.md#one-value-per-case): the mean of its judged attempts; infra errors are not judged.
CREATE VIEW case_pass AS
SELECT run_id, case_no,
       COUNT(passed) AS judged_attempts,
       AVG(CASE WHEN passed = 1 THEN CAST(1 AS DOUBLE PRECISION)
                WHEN passed = 0 THEN CAST(0 AS DOUBLE PRECISION) END) AS pass_at_1,
       MAX(passed) AS any_passed
FROM attempts
GROUP BY run_id, case_no;

-- pass@1 (mean per-case pass rate) and pass@k (k = the run's attempts per case: any attempt passed).
-- pass_at_1_sumsq gives the per-case variance for confidence intervals.
CREATE VIEW v_pass AS
SELECT p.run_id, CAST('overall' AS TEXT) AS unit, CAST(NULL AS TEXT) AS slice_key, CAST(NULL AS TEXT) AS slice_value,
       COUNT(*) AS cases,
       AVG(p.pass_at_1) AS pass_at_1,
       AVG(CAST(p.any_passed AS DOUBLE PRECISION)) AS pass_at_k,
       SUM(p.pass_at_1 * p.pass_at_1) AS pass_at_1_sumsq
FROM case_pass p
WHERE p.judged_attempts > 0
GROUP BY p.run_id
UNION ALL
SELECT p.run_id, s.slice_key || '=' || s.slice_value, s.slice_key, s.slice_value,
       COUNT(*), AVG(p.pass_at_1), AVG(CAST(p.any_passed AS DOUBLE PRECISION)), SUM(p.pass_at_1 * p.pass_at_1)
FROM case_pass p
JOIN case_slices s ON s.run_id = p.run_id AND s.case_no = p.case_no
WHERE p.judged_attempts > 0
GROUP BY p.run_id, s.slice_key, s.slice_value;

-- Error rates over attempts: any error, infra errors, and format-invalid answers (the
-- format_valid score, where a scorer records one).
CREATE VIEW v_errors AS
SELECT a.run_id, CAST('overall' AS TEXT) AS unit, CAST(NULL AS TEXT) AS slice_key, CAST(NULL AS TEXT) AS slice_value,
       COUNT(*) AS attempts,
       AVG(CAST(CASE WHEN a.error_kind IS NULL THEN 0 ELSE 1 END AS DOUBLE PRECISION)) AS error_rate,
       AVG(CAST(CASE WHEN a.error_kind = 'infra' THEN 1 ELSE 0 END AS DOUBLE PRECISION)) AS infra_error_rate,
       AVG(CAST(1 AS DOUBLE PRECISION) - a.format_valid) AS format_invalid_rate
FROM attempts a
GROUP BY a.run_id
UNION ALL
SELECT a.run_id, s.slice_key || '=' || s.slice_value, s.slice_key, s.slice_value,
       COUNT(*),
       AVG(CAST(CASE WHEN a.error_kind IS NULL THEN 0 ELSE 1 END AS DOUBLE PRECISION)),
       AVG(CAST(CASE WHEN a.error_kind = 'infra' THEN 1 ELSE 0 END AS DOUBLE PRECISION)),
       AVG(CAST(1 AS DOUBLE PRECISION) - a.format_valid)
FROM attempts a
JOIN case_slices s ON s.run_id = a.run_id AND s.case_no = a.case_no
GROUP BY a.run_id, s.slice_key, s.slice_value;

-- Latency percentiles (nearest rank) of the attempts that got an answer.
CREATE VIEW v_latency AS
SELECT run_id, unit, slice_key, slice_value,
       COUNT(*) AS timed_attempts,
       MIN(CASE WHEN rn * 100 >= 50 * cnt THEN latency_ms END) AS latency_p50_ms,
       MIN(CASE WHEN rn * 100 >= 95 * cnt THEN latency_ms END) AS latency_p95_ms
FROM (
    SELECT u.run_id, u.unit, u.slice_key, u.slice_value, a.latency_ms,
           ROW_NUMBER() OVER (PARTITION BY u.run_id, u.unit ORDER BY a.latency_ms) AS rn,
           COUNT(*) OVER (PARTITION BY u.run_id, u.unit) AS cnt
    FROM case_units u
    JOIN attempts a ON a.run_id = u.run_id AND a.case_no = u.case_no
    WHERE a.latency_ms IS NOT NULL AND (a.error_kind IS NULL OR a.error_kind <> 'infra')
) ranked
GROUP BY run_id, unit, slice_key, slice_value;

-- Tokens and cost per passed attempt (NULL where nothing passed or nothing was counted).
CREATE VIEW v_cost AS
SELECT run_id, unit, slice_key, slice_value,
       SUM(success) AS successes,
       SUM(tokens_in) AS tokens_in,
       SUM(tokens_out) AS tokens_out,
       SUM(cost_usd) AS cost_usd,
       CASE WHEN COUNT(tokens_in) + COUNT(tokens_out) > 0 THEN
           CAST(SUM(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0)) AS DOUBLE PRECISION) / NULLIF(SUM(success), 0)
       END AS tokens_per_success,
       SUM(cost_usd) / NULLIF(SUM(success), 0) AS cost_per_success
FROM (
    SELECT a.run_id, CAST('overall' AS TEXT) AS unit, CAST(NULL AS TEXT) AS slice_key,
           CAST(NULL AS TEXT) AS slice_value, CASE WHEN a.passed = 1 THEN 1 ELSE 0 END AS success,
           a.tokens_in, a.tokens_out, a.cost_usd
    FROM attempts a
    UNION ALL
    SELECT a.run_id, s.slice_key || '=' || s.slice_value, s.slice_key, s.slice_value,
           CASE WHEN a.passed = 1 THEN 1 ELSE 0 END, a.tokens_in, a.tokens_out, a.cost_usd
    FROM attempts a
    JOIN case_slices s ON s.run_id = a.run_id AND s.case_no = a.case_no
) unit_attempts
GROUP BY run_id, unit, slice_key, slice_value;

-- Tool calls in the traces and the share answered by a tool_error.
CREATE VIEW v_tools AS
SELECT e.run_id, CAST('overall' AS TEXT) AS unit, CAST(NULL AS TEXT) AS slice_key, CAST(NULL AS TEXT) AS slice_value,
       COUNT(*) AS tool_calls,
       SUM(CASE WHEN e.result_kind = 'tool_error' THEN 1 ELSE 0 END) AS tool_errors,
       AVG(CAST(CASE WHEN e.result_kind = 'tool_error' THEN 1 ELSE 0 END AS DOUBLE PRECISION)) AS tool_error_rate
FROM events e
WHERE e.kind = 'tool_call'
GROUP BY e.run_id
UNION ALL
SELECT e.run_id, s.slice_key || '=' || s.slice_value, s.slice_key, s.slice_value,
       COUNT(*),
       SUM(CASE WHEN e.result_kind = 'tool_error' THEN 1 ELSE 0 END),
       AVG(CAST(CASE WHEN e.result_kind = 'tool_error' THEN 1 ELSE 0 END AS DOUBLE PRECISION))
FROM events e
JOIN case_slices s ON s.run_id = e.run_id AND s.case_no = e.case_no
WHERE e.kind = 'tool_call'
GROUP BY e.run_id, s.slice_key, s.slice_value;

-- The same per tool, over the whole run.
CREATE VIEW v_tool_names AS
SELECT run_id, name AS tool,
       COUNT(*) AS tool_calls,
       SUM(CASE WHEN result_kind = 'tool_error' THEN 1 ELSE 0 END) AS tool_errors,
       AVG(CAST(CASE WHEN result_kind = 'tool_error' THEN 1 ELSE 0 END AS DOUBLE PRECISION)) AS tool_error_rate
FROM events
WHERE kind = 'tool_call'
GROUP BY run_id, name;

-- Everything above in one row per run and unit.
CREATE VIEW v_unit_metrics AS
SELECT e.run_id, e.unit, e.slice_key, e.slice_value,
       p.cases, p.pass_at_1, p.pass_at_k, p.pass_at_1_sumsq,
       e.attempts, e.error_rate, e.infra_error_rate, e.format_invalid_rate,
       l.latency_p50_ms, l.latency_p95_ms,
       c.successes, c.tokens_per_success, c.cost_per_success,
       COALESCE(t.tool_calls, 0) AS tool_calls, t.tool_error_rate
FROM v_errors e
LEFT JOIN v_pass p ON p.run_id = e.run_id AND p.unit = e.unit
LEFT JOIN v_latency l ON l.run_id = e.run_id AND l.unit = e.unit
LEFT JOIN v_cost c ON c.run_id = e.run_id AND c.unit = e.unit
LEFT JOIN v_tools t ON t.run_id = e.run_id AND t.unit = e.unit;

-- What the trend charts mark on a run: promotions (and seeds), resets, failed gates.
CREATE VIEW v_markers AS
SELECT g.id AS gate_id, g.candidate_run_id AS run_id, g.suite, g.created_at, g.action, g.verdict,
       g.reason, g.reset_reason, g.actor, g.candidate_sha,
       CASE WHEN g.action = 'reset' THEN 'reset'
            WHEN g.action IN ('promote', 'seed') THEN 'promotion'
            ELSE 'failed gate' END AS marker
FROM gates g
WHERE g.action IN ('reset', 'promote', 'seed') OR (g.action IN ('gate', 'compare') AND g.verdict = 'fail');

-- Runs with whether they became a baseline (promoted, seeded or blessed by a reset).
CREATE VIEW v_runs AS
SELECT r.*,
       CASE WHEN EXISTS (SELECT 1 FROM gates g WHERE g.candidate_run_id = r.id
                         AND g.action IN ('promote', 'seed', 'reset')) THEN 1 ELSE 0 END AS is_baseline
FROM runs r;
