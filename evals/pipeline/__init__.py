"""The gate and the reset after the event is known (docs/spec.md#data-flow): config → baselines →
candidate → compare → report files → publish → promote → history (``flows``), where the
candidate comes from (``candidate``), and what a job that runs the suite exposes to the code
under test (``exposure``). The one library package that ties the stages together; only
``evals.cli`` imports it."""
