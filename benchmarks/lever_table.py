"""One table of every candidate setting the held-out-class proxy judged, per graph, with a
verdict on whether it could be a *default* (issue 17).

``oral choose`` decides per graph (a candidate whose paired proxy gain minus one standard error is
above 0 replaces the defaults on that graph). A default is judged on every graph at once, and the
product is also judged on graphs we do not have, so a candidate qualifies as a default only when

* its bound (gain − s.e.) is above 0 on at least one graph, and
* on no graph is it clearly behind (gain + s.e. below 0), and
* it was judged on every graph of the table (else the verdict says where it is missing).

Anything else is at most a per-graph choice. The input is the ``<graph>.json`` files of one or
more ``oral choose --out`` folders (labelled nodes only; no test label is read anywhere here);
the same candidate judged in two folders for the same graph keeps the one with more seeds.

    python -m benchmarks.lever_table benchmarks/results/choose benchmarks/results/choose_temperature \
        --out benchmarks/results/lever_table/lever_table.md
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def read_choices(folders: list[Path], protocol: str = "ours") -> dict[str, dict[str, dict]]:
    """``{candidate: {graph: row}}`` from every ``<graph>.json`` of the folders whose protocol is
    ``protocol`` ("both": any) (the row of :func:`harness.proxy.choose_setting`, plus the
    folder it came from)."""
    table: dict[str, dict[str, dict]] = {}
    for folder in folders:
        files = sorted(folder.glob("*.json"))
        if not files:
            raise SystemExit(f"error: {folder}: no oral choose table (<graph>.json) in it")
        for path in files:
            choice = json.loads(path.read_text())
            # "paper (the strict task)": a graph whose paper-protocol proxy is the strict one
            if protocol != "both" and choice.get("protocol", "ours").split()[0] != protocol:
                continue
            graph = choice["graph"]
            for row in choice.get("candidates", []):
                cells = table.setdefault(row["candidate"], {})
                old = cells.get(graph)
                if old is None or row["seeds"] > old["seeds"]:
                    cells[graph] = {**row, "folder": folder.name}
    return table


def verdict(cells: dict[str, dict], graphs: list[str]) -> str:
    """Default, per-graph choice or neither, by the rule of the module docstring."""
    behind = [g for g, r in cells.items() if r["gain"] + r["se"] < 0]
    ahead = [g for g, r in cells.items() if r["bound"] > 0]
    missing = [g for g in graphs if g not in cells]
    if behind:
        return "not a default: behind on " + ", ".join(sorted(behind))
    if missing:
        return "not judged on " + ", ".join(missing)
    if ahead:
        return "default candidate (ahead on " + ", ".join(sorted(ahead)) + ")"
    return "no gain shown"


def render(table: dict[str, dict[str, dict]], command: str) -> str:
    graphs = sorted({g for cells in table.values() for g in cells})
    lines = ["# Proxy levers across graphs (held-out-class proxy, labelled nodes only)", "",
             f"Command: `{command}`. Each cell: the paired gain of `mean@200:10` over the defaults "
             "(± s.e., seeds ahead / seeds) from an `oral choose` table; **bold** where gain − s.e. "
             "> 0 (what `oral choose` takes for that graph). A default needs a bound above 0 "
             "somewhere and no graph with gain + s.e. below 0; a blank cell was not run; `from`: the "
             "folders the cells came from (both sides of a cell always ran on one device; "
             "`*_gpu` folders on a lent GPU).", "",
             "| candidate | " + " | ".join(graphs) + " | verdict | from |",
             "|---|" + "---|" * len(graphs) + "---|---|"]
    for name in sorted(table):
        cells = table[name]
        row = []
        for g in graphs:
            r = cells.get(g)
            if r is None:
                row.append("")
                continue
            text = f"{r['gain']:+.1f} ± {r['se']:.1f} ({r['ahead']}/{r['seeds']})"
            row.append(f"**{text}**" if r["bound"] > 0 else text)
        folders = ", ".join(sorted({f"`{r['folder']}`" for r in cells.values()}))
        lines.append(f"| `{name}` | " + " | ".join(row) + f" | {verdict(cells, graphs)} | {folders} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="oral choose --out folders")
    parser.add_argument("--protocol", choices=("ours", "paper", "both"), default="ours",
                        help="whose known classes the proxy hid from (oral choose --protocol)")
    parser.add_argument("--out", type=Path, help="write the Markdown table here (else stdout)")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"{folder}: not a folder")
    command = "python -m benchmarks.lever_table " + " ".join(str(f) for f in args.folders)
    if args.protocol != "ours":
        command += f" --protocol {args.protocol}"
    if args.out:
        command += f" --out {args.out}"
    text = render(read_choices(args.folders, args.protocol), command)
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
