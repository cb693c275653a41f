"""How the regroup's cut fares on a night's labelled known classes (``+regroupcal``'s
calibration, :func:`oral_core.recut.cut_calibration`; issue 60). No fit, no test label: the
snapshot's labelled nodes, split as the pipeline splits them, on the fixed view ``S^2 X``.

    OMP_NUM_THREADS=1 python -m benchmarks.cut_calibration --loops STATE [--graphs cora,...]
        [--sims 21] [--nights 5,8] [--out DIR]

One row per (loop, night): the known classes read and the share the cut divides, the pairs read
and the share it tells apart, and whether ``+regroupcal`` would regroup that night
(:func:`oral_core.recut.cut_tells_classes_apart`). Written to ``DIR/table.md``.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def night_calibration(path: str) -> dict:
    """The calibration of the snapshot at ``path`` (its train and validation labels)."""
    import torch

    from benchmarks.split_repeat_proxy import night_task
    from oral_core.answer import answer_view
    from oral_core.recut import cut_calibration, cut_tells_classes_apart

    g, x, train, val, k = night_task(path)
    got = cut_calibration(answer_view(x, g.edge_index), torch.where(train >= 0, train, val), k)
    return got | {"regroups": cut_tells_classes_apart(got)}


def row_text(loop: str, night: int, got: dict) -> str:
    def share(v):
        return "" if v is None else f"{v:.2f}"

    return (f"| {loop} | {night} | {got['classes']} | {share(got['divides'])} | {got['pairs']} | "
            f"{share(got['tells_apart'])} | {'yes' if got['regroups'] else 'no'} |")


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments, loop_nights

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora,amazonphoto,blogcatalog,synthetic15,synthetic15-sep1.5", "21", "5,8",
                   seeds=None)
    ap.add_argument("--out", default=None, help="a folder for table.md (default: print only)")
    args = ap.parse_args(argv)
    lines = ["| loop | night | known classes read | divided | pairs read | told apart | "
             "+regroupcal regroups |", "|---|---|---|---|---|---|---|"]
    for loop, night, _, snapshot in loop_nights(Path(args.loops), args.graphs, args.sims,
                                                args.nights, "0"):
        lines.append(row_text(loop, night, night_calibration(snapshot)))
        print(lines[-1], flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "table.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
