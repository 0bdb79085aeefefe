"""``evalgate history plot --out trend.svg|png``: per-unit lines over the runs (commits), 95% CI
bands, and markers for promotions, resets and failed gates. matplotlib is an optional extra
(``pip install 'evalgate-action[plot]'``); without it the command says so and exits 2."""

from __future__ import annotations

from pathlib import Path

from evals.common.errors import InputFileError, UsageError
from evals.history.trends import Trends, nothing_to_show

MAX_LINES = 12
MARKER_STYLE = {  # marker → (symbol, colour, label)
    "promotion": ("^", "#2da44e", "promoted to baseline"),
    "reset": ("D", "#8250df", "reset (blessed)"),
    "failed gate": ("X", "#cf222e", "gate failed"),
}


def plot(trends: Trends, out: Path) -> Path:
    if out.suffix.lower() not in (".svg", ".png"):
        raise UsageError(f"--out {out}: the image format comes from the name: .svg or .png")
    try:
        import matplotlib
    except ImportError:
        raise UsageError(
            "history plot needs matplotlib: pip install 'evalgate-action[plot]' (or use `evalgate history show`)"
        ) from None
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    if not trends.runs or not trends.units:
        raise UsageError(nothing_to_show(trends, "to plot"))
    units = list(trends.units.items())[:MAX_LINES]
    xs = list(range(len(trends.runs)))
    fig, ax = plt.subplots(figsize=(max(7.0, 0.7 * len(xs) + 3), 4.8), dpi=110)
    colours = plt.get_cmap("tab10")
    for i, (unit, values) in enumerate(units):
        colour = "#24292f" if unit == "overall" else colours(i % 10)
        points = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if not points:
            continue
        px = [x for x, _ in points]
        ax.plot(
            px,
            [v.value for _, v in points],
            marker="o",
            markersize=4,
            linewidth=2.4 if unit == "overall" else 1.4,
            color=colour,
            label=unit,
            zorder=3,
        )
        banded = [(x, v.low, v.high) for x, v in points if v.low is not None and v.high is not None]
        if banded:
            ax.fill_between(
                [x for x, _, _ in banded],
                [low for _, low, _ in banded],
                [high for _, _, high in banded],
                color=colour,
                alpha=0.12,
                linewidth=0,
            )
    seen: set[str] = set()
    for x, run in zip(xs, trends.runs, strict=True):
        for k, marker in enumerate(run.markers):
            symbol, colour, label = MARKER_STYLE[marker]
            ax.axvline(x, color=colour, alpha=0.3, linewidth=1, linestyle="--", zorder=1)
            # Above the plot area (x in data, y in axes units), stacked when a run has several.
            ax.scatter(
                [x],
                [1.03 + 0.06 * k],
                marker=symbol,
                s=60,
                color=colour,
                zorder=4,
                clip_on=False,
                transform=ax.get_xaxis_transform(),
                label=label if marker not in seen else None,
            )
            seen.add(marker)
    labels = [run.label for run in trends.runs]
    # Commits (7 characters) fit side by side; longer labels (a time, a --sha name) overlap unless turned.
    crowded = len(xs) > 8 or (len(xs) > 1 and max(map(len, labels)) > 8)
    ax.set_xticks(xs, labels, rotation=45 if crowded else 0, ha="right" if crowded else "center", fontsize=8)
    ax.set_xlabel("commit (oldest → newest)")
    ax.set_ylabel(trends.metric)
    shown = len(units)
    more = f" (first {shown} of {len(trends.units)} units)" if len(trends.units) > shown else ""
    ax.set_title(f"{trends.suite}: {trends.metric} per slice{more}", fontsize=11, pad=22)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, format=out.suffix.lower().lstrip("."))
    except OSError as exc:
        raise InputFileError(out, f"cannot write: {exc.strerror or exc}", "check the --out path") from None
    finally:
        plt.close(fig)
    return out
