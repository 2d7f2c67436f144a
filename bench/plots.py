"""Plots for docs/benchmarks.md, drawn from the JSON the benchmarks write (matplotlib: the `bench` extra).

    python bench/plots.py maskbench bench-jsonschema.json --out docs/img/maskbench.png
    python bench/plots.py table1 bench/results/table1-syncode.json --out docs/img/table1.png

``maskbench`` reads what ``bench/jsonschema.py --out`` writes: per engine, the time to first mask of
every compiled schema as a distribution (its p50 and p99 marked), and the mask-time p50 / p99 (and,
for localgcd with the cache on, TTFM and masks from the cache).  ``table1`` reads what
``bench/tables.py --out`` writes (one or more files): per grammar × tokenizer, the compile time
(full build and default lazy compile) and the per-token mask time, beside GreatGramma's Table 1
ranges (offline 106–171 s, online 21–30 ms per token).  Both use log scales: the engines differ by
orders of magnitude.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GREATGRAMMA_OFFLINE_S = (106.0, 171.0)  # GreatGramma's Table 1, Go / Java / Python, Llama-3 tokenizer
GREATGRAMMA_ONLINE_MS = (21.0, 30.0)


@dataclass(frozen=True)
class EngineFigures:
    """One engine's MaskBench figures, as bench/jsonschema.py --out records them."""

    name: str
    passing: int
    schemas: int
    ttfm_ms: np.ndarray  # one per compiled schema
    mask_p50_us: float
    mask_p99_us: float
    cached_ttfm_ms: np.ndarray | None  # localgcd with the cache on: the same schemas from the cache
    cached_mask_us: dict | None

    @classmethod
    def from_summary(cls, name: str, s: dict) -> EngineFigures:
        per = s.get("per_schema", {})
        cached = [v["ttfm_cached_ms"] for v in per.values() if "ttfm_cached_ms" in v]
        return cls(name, s["passing"], s["schemas"], np.array([v["ttfm_ms"] for v in per.values()]),
                   s["mask_p50_us"], s["mask_p99_us"], np.array(cached) if cached else None,
                   s.get("masks_cached_us"))


def maskbench(paths: list[Path], out: Path, title: str | None) -> None:
    import matplotlib.pyplot as plt

    engines: list[EngineFigures] = []
    for path in paths:
        data = json.loads(path.read_text())
        engines += [EngineFigures.from_summary(n, s) for n, s in data["engines"].items()]
    fig, (ttfm_ax, mask_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    for e in engines:
        series = [(e.name, e.ttfm_ms)]
        if e.cached_ttfm_ms is not None:
            series.append((f"{e.name}, from the cache", e.cached_ttfm_ms))
        for label, values in series:
            values = np.sort(values)
            if not len(values):
                continue
            share = np.arange(1, len(values) + 1) / len(values)
            p50, p99 = np.percentile(values, 50), np.percentile(values, 99)
            ttfm_ax.step(values, share, where="post",
                         label=f"{label}: p50 {p50:.1f} ms, p99 {p99:.0f} ms ({e.passing}/{e.schemas} pass)")
    ttfm_ax.set_xscale("log")
    ttfm_ax.set_xlabel("time to first mask, ms (log)")
    ttfm_ax.set_ylabel("share of compiled schemas")
    ttfm_ax.set_title("Time to first mask (compile + first mask)")
    ttfm_ax.grid(True, which="both", alpha=0.3)
    ttfm_ax.legend(fontsize=7, loc="lower right")

    labels, p50s, p99s = [], [], []
    for e in engines:
        labels.append(e.name)
        p50s.append(e.mask_p50_us)
        p99s.append(e.mask_p99_us)
        if e.cached_mask_us:
            labels.append(f"{e.name}\nfrom the cache")
            p50s.append(e.cached_mask_us["p50"])
            p99s.append(e.cached_mask_us["p99"])
    x = np.arange(len(labels))
    for offset, values, label in ((-0.2, p50s, "p50"), (0.2, p99s, "p99")):
        bars = mask_ax.bar(x + offset, values, 0.4, label=label)
        mask_ax.bar_label(bars, labels=[f"{v:,.1f}" if v < 100 else f"{v:,.0f}" for v in values], fontsize=7)
    mask_ax.axhline(500, color="grey", linestyle="--", linewidth=1, label="target p99 ≤ 500 µs")
    mask_ax.set_yscale("log")
    mask_ax.set_xticks(x, labels, fontsize=8)
    mask_ax.set_ylabel("mask time, µs (log)")
    mask_ax.set_title("Per-token mask time")
    mask_ax.legend(fontsize=7)
    fig.suptitle(title or "MaskBench (maskbench-dev, llama-bpe)", fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def table1(paths: list[Path], out: Path, title: str | None) -> None:
    import matplotlib.pyplot as plt

    cells: dict[tuple[str, str], dict[str, float]] = {}
    for path in paths:
        for pair in json.loads(path.read_text())["pairs"]:
            if "runs" not in pair:
                continue
            run = min(pair["runs"], key=lambda r: r["t_cold"])  # the run's own fastest; tables.py's median
            # is what its table prints, but one run per pair is what the page records
            name = Path(pair["grammar"]).stem
            cell = cells.setdefault((name, pair["vocab"]), {})
            cell["full" if pair["eager"] else "lazy"] = run["t_cold"]
            cell["p50 warm"] = run["p50_warm_ms"]
            cell["p99 warm"] = run["p99_warm_ms"]
            cell["p99 cold" if not pair["eager"] else "p99 cold (full build)"] = run["p99_cold_ms"]
    keys = sorted(cells)
    labels = [f"{g}\n{v}" for g, v in keys]
    x = np.arange(len(keys))
    fig, (off_ax, on_ax) = plt.subplots(1, 2, figsize=(12, 5))

    def bars(ax, names, unit):
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            values = [cells[k].get(name, np.nan) for k in keys]
            ax.bar(x + (i - (len(names) - 1) / 2) * width, values, width, label=f"localgcd {name}")
        ax.set_yscale("log")
        ax.set_xticks(x, labels, fontsize=6)
        ax.set_ylabel(unit)
        ax.grid(True, axis="y", which="both", alpha=0.3)

    bars(off_ax, ["full", "lazy"], "seconds (log)")
    off_ax.axhspan(*GREATGRAMMA_OFFLINE_S, color="tab:red", alpha=0.25, label="GreatGramma offline 106–171 s")
    off_ax.set_title("Offline: compile (full build / default lazy)")
    off_ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    bars(on_ax, ["p50 warm", "p99 warm", "p99 cold", "p99 cold (full build)"], "ms per token (log)")
    on_ax.axhspan(*GREATGRAMMA_ONLINE_MS, color="tab:red", alpha=0.25, label="GreatGramma online 21–30 ms")
    on_ax.set_title("Online: mask + advance per token")
    on_ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    fig.suptitle(title or "GreatGramma's Table 1 grammars (SynCode's go/java/python.lark) vs localgcd", fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plot", choices=("maskbench", "table1"))
    parser.add_argument("results", nargs="+", type=Path, help="JSON written by the bench's --out")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    parser.add_argument("--title", help="the figure's title (default: what the data is)")
    args = parser.parse_args(argv)
    for path in args.results:
        if not path.is_file():
            print(f"plots.py: {path}: no such file", file=sys.stderr)
            return 2
    try:
        {"maskbench": maskbench, "table1": table1}[args.plot](args.results, args.out, args.title)
    except (KeyError, json.JSONDecodeError) as exc:
        print(f"plots.py: {args.results[0]}: not the JSON bench/{'jsonschema' if args.plot == 'maskbench' else 'tables'}"
              f".py --out writes ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
