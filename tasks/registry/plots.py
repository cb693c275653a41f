"""The PNG plots of a training run: loss curves and validation accuracy per epoch, class sizes.
Matplotlib's Agg canvas directly: no pyplot, no global backend switch."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa

from tasks.registry.values import is_number

LOSS_KEYS = ("loss", "l_ce", "l_reg", "l_con")


def class_sizes(predictions: pa.Table | None, summary=None) -> list[tuple[str, int, bool]]:
    """``(label, size, is_novel)`` per class, in class id order, from the predictions (column
    ``class_id`` or ``class_key``, with ``class_name``/``is_novel`` when present), else from
    the class summary's ``size`` entries."""
    if predictions is not None and predictions.num_rows:
        id_col = next((c for c in ("class_id", "class_key") if c in predictions.column_names), None)
        if id_col is not None:
            has_name = "class_name" in predictions.column_names
            has_novel = "is_novel" in predictions.column_names
            aggs = [(id_col, "count")]
            if has_name:
                aggs.append(("class_name", "min"))
            if has_novel:
                aggs.append(("is_novel", "max"))
            grouped = predictions.group_by(id_col).aggregate(aggs).sort_by(id_col)
            ids = grouped.column(id_col).to_pylist()
            counts = grouped.column(f"{id_col}_count").to_pylist()
            names = grouped.column("class_name_min").to_pylist() if has_name else [None] * len(ids)
            novel = grouped.column("is_novel_max").to_pylist() if has_novel else [False] * len(ids)
            return [(str(n) if n is not None else ("unassigned" if i is None or i < 0 else str(i)),
                     int(k), bool(v)) for i, k, n, v in zip(ids, counts, names, novel)]
    rows = summary.get("classes") if isinstance(summary, dict) else summary
    out = []
    for row in rows or []:
        if isinstance(row, Mapping) and is_number(row.get("size")):
            label = row.get("class_name") or row.get("class_id") or row.get("class_key") or len(out)
            out.append((str(label), int(row["size"]), bool(row.get("is_novel", False))))
    return out


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def plot_loss_curves(history: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """PNG: the loss terms per epoch (left) and validation accuracy with class count (right).
    Uses the Agg canvas directly: no pyplot, no global backend switch."""
    fig = _figure(10, 4)
    ax_loss, ax_val = fig.subplots(1, 2)
    for key in LOSS_KEYS:
        pts = [(r.get("epoch", i), r[key]) for i, r in enumerate(history) if is_number(r.get(key))]
        if pts:
            ax_loss.plot(*zip(*pts), label=key)
    ax_loss.set_xlabel("epoch")
    ax_loss.set_title("training losses")
    if ax_loss.lines:
        ax_loss.legend()
    pts = [(r.get("epoch", i), r["val_acc"]) for i, r in enumerate(history)
           if is_number(r.get("val_acc"))]
    if pts:
        ax_val.plot(*zip(*pts), color="tab:blue", label="val_acc")
    ax_val.set_xlabel("epoch")
    ax_val.set_ylabel("validation accuracy (known classes)")
    ax_val.set_title("model selection")
    pts = [(r.get("epoch", i), r["classes"]) for i, r in enumerate(history)
           if is_number(r.get("classes"))]
    if pts:
        twin = ax_val.twinx()
        twin.step(*zip(*pts), where="post", color="tab:orange", label="classes")
        twin.set_ylabel("classes")
    # fixed margins: the labels are fixed text (tight_layout measured them on every night for
    # about 0.2 s, most of the plot's time)
    fig.subplots_adjust(left=0.07, right=0.93, bottom=0.13, top=0.92, wspace=0.28)
    fig.savefig(path, format="png")
    return path


def plot_class_sizes(sizes: Sequence[tuple[str, int, bool]], path: Path) -> Path:
    """PNG: one bar per class, known classes blue, novel ones orange."""
    fig = _figure(max(5.0, min(20.0, 0.4 * len(sizes) + 2)), 4)
    ax = fig.subplots()
    labels = [s[0] for s in sizes]
    colors = ["tab:orange" if s[2] else "tab:blue" for s in sizes]
    ax.bar(range(len(sizes)), [s[1] for s in sizes], color=colors)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("nodes")
    ax.set_title("class sizes (blue: known, orange: novel)")
    fig.tight_layout()  # class names vary in length: measured margins
    fig.savefig(path, format="png")
    return path
