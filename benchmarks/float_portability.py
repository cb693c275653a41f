"""Does a seeded fit give the same answer on another processor? (issue 61; label-free)

    OMP_NUM_THREADS=1 ORAL_DATA_DIR=../shared/datasets python -m benchmarks.float_portability
        [--graph cora] [--seed 0] [--epochs 200] [--out benchmarks/results/float_portability]

PyTorch's CPU kernels are chosen at run time by the processor's instruction set (ATen's
``ATEN_CPU_CAPABILITY``: default, avx2, avx512), and so are MKL's (``MKL_CBWR``); each sums in
its own order, so the same seeded fit rounds differently on two machines, and over the epochs of
clustering and pseudo-labels a rounding difference may grow like a change of seed. This benchmark
fits one task (the paper's open-world split of ``--graph``, seed ``--seed``, ``ORALConfig``'s
defaults) once per setting of :data:`SETTINGS`, each in a child process whose environment sets
the kernels, and compares the answers with the first setting's (this machine as it is): ARI and
the share of nodes whose class differs over the test nodes (label-free: no label is read), and a
hash of seven kernel probes (a matrix product, softmax, exp, ELU, a sum, log-softmax,
index_add) showing which settings round differently. ``native, again`` repeats the first setting
in a fresh process: a fit is repeatable on one machine. Forcing the same kernels on every worker
(``ATEN_CPU_CAPABILITY=avx2`` and ``MKL_CBWR=AVX2``, on any x86 processor with AVX2) is what an
operator who needs the same answer from any worker can set; what it costs and whether it holds
across two real machines is reported, not assumed.

Writes ``<out>/table.md`` and ``<out>/fits.csv`` (one row per setting).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "float_portability"
#: ``(name, environment)``: this machine as it is first (the reference), then forced kernels
SETTINGS = (
    ("native", {}),
    ("native, again", {}),
    ("ATen avx2", {"ATEN_CPU_CAPABILITY": "avx2"}),
    ("ATen avx2, MKL AVX2", {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}),
    ("ATen default, MKL compatible", {"ATEN_CPU_CAPABILITY": "default",
                                      "MKL_CBWR": "COMPATIBLE"}),
)
#: the variables a setting may set; every child starts without them
KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")


def kernel_probes() -> list[str]:
    """Short hashes of seven kernels' outputs on fixed random inputs (one thread)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(2000, 300, generator=gen), torch.randn(300, 64, generator=gen)
    idx = torch.randint(0, 2000, (50000,), generator=gen)
    src = torch.randn(50000, 64, generator=gen)
    outs = [a @ b, torch.softmax(a, 1), torch.exp(a), torch.nn.functional.elu(a), a.sum(1),
            torch.log_softmax(a @ b, 1), torch.zeros(2000, 64).index_add_(0, idx, src)]
    return [hashlib.md5(o.numpy().tobytes()).hexdigest()[:6] for o in outs]


def child(graph: str, seed: int, epochs: int, answer: Path) -> None:
    """One fit in this process (its kernels as its environment set them): the test nodes' class
    ids, the probes and the seconds, saved to ``answer``."""
    import torch

    from oral_core.config import ORALConfig
    from oral_core.datasets import load_dataset
    from oral_core.splits import make_split
    from oral_core.trainer import ORAL

    torch.set_num_threads(1)
    g = load_dataset(graph, os.environ.get("ORAL_DATA_DIR"))
    split = make_split(g.y, seed)
    cfg = ORALConfig(seed=seed, epochs=epochs, progress=False)
    start = time.perf_counter()
    out = ORAL(cfg).fit(g.x, g.edge_index, split.train_labels(g.y), split.val_labels(g.y))
    seconds = time.perf_counter() - start
    ids = out.discoveries_["last"].class_id[split.test_mask]
    torch.save({"ids": ids, "probes": kernel_probes(), "seconds": seconds}, answer)


def child_env(setting: dict) -> dict:
    """This process's environment without the kernel variables, then ``setting``'s, one thread."""
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_VARIABLES}
    return env | {"OMP_NUM_THREADS": "1"} | setting


def fit_in_child(graph: str, seed: int, epochs: int, setting: dict, answer: Path) -> dict:
    """Run :func:`child` in a fresh process with ``setting``'s kernels; its saved answer."""
    import torch

    cmd = [sys.executable, "-m", "benchmarks.float_portability", "--child", str(answer),
           "--graph", graph, "--seed", str(seed), "--epochs", str(epochs)]
    done = subprocess.run(cmd, cwd=ROOT, env=child_env(setting), capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the fit under {setting or 'this machine as it is'} failed: {tail[0]}")
    return torch.load(answer)


def compare(reference, ids) -> tuple[float, float]:
    """``(ARI, share of nodes whose class id differs after matching the ids)`` (label-free)."""
    import torch

    from oral_core.hungarian import contingency, max_assignment
    from oral_core.metrics import adjusted_rand_index

    ari = adjusted_rand_index(reference, ids)
    a, b = torch.unique(reference, return_inverse=True)[1], torch.unique(ids, return_inverse=True)[1]
    joint = contingency(a, b, int(a.max()) + 1, int(b.max()) + 1)
    rows, cols = max_assignment(joint)
    same = int(joint[torch.as_tensor(rows), torch.as_tensor(cols)].sum())
    return ari, 100.0 * (1 - same / len(ids))


def table(rows: list[dict], graph: str, seed: int, epochs: int) -> str:
    lines = [f"Fits of {graph}'s open-world split (seed {seed}, {epochs} epochs, ORALConfig's "
             f"defaults, one thread), one per kernel setting, each in a fresh process, compared "
             f"with the first on the test nodes (label-free).", "",
             "| setting | environment | kernel probes (7 hashes) | ARI with native | nodes in "
             "another class (%) | fit seconds | seconds / native |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['environment'] or '(none)'} | {r['probes']} | "
                     f"{r['ari']:.3f} | {r['moved']:.1f} | {r['seconds']:.1f} | "
                     f"{r['seconds_ratio']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="cora")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.graph, args.seed, args.epochs, Path(args.child))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = ROOT / "benchmarks" / ".state" / "float_portability"
    scratch.mkdir(parents=True, exist_ok=True)
    rows, reference = [], None
    for i, (name, setting) in enumerate(SETTINGS, 1):
        print(f"[{i}/{len(SETTINGS)}] {name}: fitting {args.graph} in a child process", flush=True)
        got = fit_in_child(args.graph, args.seed, args.epochs, setting, scratch / f"{i}.pt")
        reference = reference or got
        ari, moved = compare(reference["ids"], got["ids"])
        rows.append({"setting": name, "environment": " ".join(f"{k}={v}" for k, v in setting.items()),
                     "probes": " ".join(got["probes"]), "ari": ari, "moved": moved,
                     "seconds": got["seconds"],
                     "seconds_ratio": got["seconds"] / reference["seconds"]})
    with open(out / "fits.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    text = table(rows, args.graph, args.seed, args.epochs)
    (out / "table.md").write_text(text + "\n")
    print(text)
    print(json.dumps({"written": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
