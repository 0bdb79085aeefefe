"""The baseline store (docs/spec.md#baseline-store): the store and its rules for which baseline a gate uses
(``baseline``), its files as local blobs or release assets (``blobs``, ``releases``), writing a
snapshot (``write``), commit ancestry and snapshot order, whether a gated candidate is promoted
(``promotion``), and which store a command names and what a candidate is compared with
(``selection``). May import ``evals.github``'s client and everything below it; never
``history`` or ``pipeline``."""
