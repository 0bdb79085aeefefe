"""The results file (docs/spec.md#results-format), the contract between every stage: the pydantic models and their
loading and writing (``model``), attempt traces (``trace``), secret masking of everything
written (``masking``), the funnel of everything evalgate says (``console``), which errors are
infrastructure (``infra``), what a run says on its own without a baseline (``summary``), and the
baseline store's manifest entries that a comparison names (``manifest``). Imports only ``evals.common``."""
