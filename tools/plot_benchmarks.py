#!/usr/bin/env python3
"""Plots doc/data/*.csv (figures measured on the GPU machines, see
doc/benchmarks.md) into doc/benchmarks-h200x2.png: lanes and migrations on
two H200, and matmul on two and four.  Needs matplotlib (PyPI):
    python3 -m venv v && v/bin/pip install matplotlib && v/bin/python tools/plot_benchmarks.py
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "doc")


def rows(name):
    with open(os.path.join(DOC, "data", name)) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def main():
    mig = rows("h200x2-migrations.csv")
    mm = rows("h200x2-matmul.csv")
    lanes = rows("h200x2-lanes.csv")
    mig4 = rows("h200x4-migrations.csv")
    mm4 = rows("h200x4-matmul.csv")
    fig, (c, a, b, e) = plt.subplots(1, 4, figsize=(24, 4.8))

    xs = range(len(lanes))
    for k, col in enumerate(["write", "read"]):
        c.bar([x + (k - 0.5) * 0.35 for x in xs],
              [float(r[col]) for r in lanes], 0.35, label=f"remote {col}")
    c.axhline(5.10, color="grey", linestyle="--",
              label="loopback TCP, one stream (iperf-like)")
    c.axhline(3.29, color="grey", linestyle=":",
              label="loopback TCP, 64 MiB to 64 MiB")
    c.axhline(10.24, color="black", linestyle=":",
              label="the same over 4 streams")
    c.axhline(0.8 * 5.10, color="red", linestyle="-", linewidth=0.8,
              label="target: 80% of one stream")
    c.set_xticks(list(xs))
    c.set_xticklabels([r["lanes"] for r in lanes])
    c.set_xlabel("lanes (POCL_REMOTE_LANES)")
    c.set_ylabel("GB/s")
    c.set_title("64 MiB write / read through one pocld (H200)")
    c.legend(fontsize=8)
    c.grid(True, axis="y", alpha=0.3)

    sizes = [int(r["bytes"]) for r in mig]
    labels = {"0afe65d": "write behind a user event",
              "1ac330b": "write on arrival",
              "29f42c0": "streamed in 4 MiB chunks",
              "ddc04c0": "and client transfers in parts",
              "dd7480a": "and pinned staging"}
    for commit, label in labels.items():
        gbps = [s / float(r[commit]) / 1e3 for s, r in zip(sizes, mig)]
        a.plot(sizes, gbps, marker="o", label=f"{label} ({commit})")
    sizes4 = [int(r["bytes"]) for r in mig4]
    for commit, label in {"e9adf23": "peer lanes, 2 of 4 H200 (e9adf23)",
                          "d4806b9": "staging pool past 1 GiB, 2 of 4 H200 (d4806b9)",
                          "ce6a3d6": "threads that stay, 2 of 4 H200 (ce6a3d6)"}.items():
        a.plot(sizes4, [s / float(r[commit]) / 1e3 for s, r in zip(sizes4, mig4)],
               marker="s", linestyle="--", label=label)
    a.axhline(18.36, color="black", linestyle="-.",
              label="the client's 64 MiB write (d4806b9 run)")
    a.axhline(21.37, color="black", linestyle=(0, (1, 3)),
              label="the client's 64 MiB write (ce6a3d6 run)")
    a.axhline(4.7, color="grey", linestyle="--",
              label="loopback TCP, one stream (iperf-like)")
    a.axhline(3.0, color="grey", linestyle=":",
              label="loopback TCP, 64 MiB buffer to 64 MiB buffer")
    a.set_xscale("log", base=2)
    a.set_xlabel("buffer size (bytes)")
    a.set_ylabel("GB/s")
    a.set_title("Migration between two pocld, one per H200")
    a.legend(fontsize=8)
    a.grid(True, alpha=0.3)

    width = 0.25
    xs = range(len(mm))
    for k, (col, label) in enumerate([("native", "native NVIDIA"),
                                      ("remote_1gpu", "1 remote GPU"),
                                      ("remote_2gpu", "2 remote GPUs")]):
        b.bar([x + (k - 1) * width for x in xs], [float(r[col]) for r in mm],
              width, label=label)
    b.set_xticks(list(xs))
    b.set_xticklabels([f"{r['n']} x {r['n']}" for r in mm])
    b.set_yscale("log")
    b.set_ylabel("ms (best of 5)")
    b.set_title("examples/remote/matmul, two H200")
    b.legend(fontsize=8)
    b.grid(True, axis="y", alpha=0.3)

    width = 0.2
    xs = range(len(mm4))
    cols = [("native", "native NVIDIA"), ("remote_1gpu", "1 remote GPU"),
            ("remote_2gpu", "2 remote GPUs"), ("remote_4gpu", "4 remote GPUs")]
    for k, (col, label) in enumerate(cols):
        e.bar([x + (k - 1.5) * width for x in xs],
              [float(r[col]) for r in mm4], width, label=label)
    for x, r in zip(xs, mm4):
        eff = float(r["native"]) / (4 * float(r["remote_4gpu"]))
        e.annotate(f"{100 * eff:.1f}%", (x + 1.5 * width,
                                         float(r["remote_4gpu"])),
                   ha="center", va="bottom", fontsize=8)
    e.set_xticks(list(xs))
    e.set_xticklabels([f"{r['n']} x {r['n']}" for r in mm4])
    e.set_yscale("log")
    e.set_ylabel("ms (best of 3)")
    e.set_title("matmul, four H200 (efficiency on 4)")
    e.legend(fontsize=8)
    e.grid(True, axis="y", alpha=0.3)
    fig.suptitle("PoCL-R on nvidia-h200-x2 and nvidia-h200-x4")
    fig.tight_layout()
    out = os.path.join(DOC, "benchmarks-h200x2.png")
    fig.savefig(out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
