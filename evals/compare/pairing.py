"""Pairing two runs on shared case ids (docs/spec.md#pairing), and the units (overall, each slice value) as
row indices into the paired arrays."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from evals.compare.metrics import RunTable
from evals.compare.paired import UnitIndex


@dataclass
class Pairing:
    base_rows: np.ndarray
    cand_rows: np.ndarray
    added: list[str]
    removed: list[str]
    changed: list[str]
    errored: list[str]
    outside_subset: int


def pair(base: RunTable, cand: RunTable, subset: bool) -> Pairing:
    """Pair on shared ids with equal hashes (where both have one). With a subset candidate
    (smoke run, shard) baseline cases outside it are not 'removed', just out of scope."""
    b_index = base.index()
    c_ids = set(cand.ids)
    base_rows, cand_rows, added, changed, errored = [], [], [], [], []
    for ci, case_id in enumerate(cand.ids):
        bi = b_index.get(case_id)
        if bi is None:
            added.append(case_id)
        elif base.hashes[bi] and cand.hashes[ci] and base.hashes[bi] != cand.hashes[ci]:
            changed.append(case_id)
        elif base.errored[bi] or cand.errored[ci]:
            errored.append(case_id)
        else:
            base_rows.append(bi)
            cand_rows.append(ci)
    missing = [case_id for case_id in base.ids if case_id not in c_ids]
    return Pairing(
        np.array(base_rows, dtype=np.intp),
        np.array(cand_rows, dtype=np.intp),
        added,
        [] if subset else missing,
        changed,
        errored,
        len(missing) if subset else 0,
    )


def repeats_overall(counts: Mapping[str, int], total: int) -> bool:
    """A slice key whose one value holds every case (``task=toy`` of a one-task import): its unit
    would be overall again, under another name, so it is no unit of its own."""
    return len(counts) == 1 and sum(counts.values()) == total


def unit_indices(table: RunTable, rows: np.ndarray, slice_keys: list[str]) -> list[UnitIndex]:
    """``overall`` then every slice value (sorted), as row indices into the paired arrays; a key
    that :func:`repeats_overall` adds none."""
    units = [UnitIndex("overall", None, None, None)]
    for key in slice_keys:
        values = np.array([table.case_slices[r].get(key, "") for r in rows], dtype=object)
        members = {value: np.flatnonzero(values == value) for value in sorted({v for v in values if v})}
        if repeats_overall({value: len(at) for value, at in members.items()}, len(rows)):
            continue
        units += [UnitIndex(f"{key}={value}", key, value, at) for value, at in members.items()]
    return units
