#!/usr/bin/env python3
"""Draws a merged PoCL-R trace (tools/trace_merge.py) as a timeline PNG: one
row per thread of each process, each event a bar (at least a hair wide),
each command's events joined by lines in time order (its flow).  The
pictures of doc/tracing.md come from it.  Needs matplotlib (PyPI):

    build/venv/bin/python tools/trace_plot.py merged.json out.png \\
        [--ids FIRST-LAST] [--title T]

--ids: only the commands whose event ids lie in FIRST..LAST.
"""
import argparse
import collections
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {
    "enqueue": "#1f77b4", "send": "#aec7e8", "send_data": "#17becf",
    "notify": "#9467bd", "recv": "#ff7f0e", "data_recv": "#ffbb78",
    "native_enqueue": "#2ca02c", "native_complete": "#d62728",
    "completion_send": "#8c564b", "peer_send": "#e377c2",
    "peer_recv": "#f7b6d2", "completion": "#7f7f7f", "read_data": "#c7c7c7",
    "complete": "#000000",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--ids")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    with open(a.trace) as f:
        d = json.load(f)
    lo, hi = (0, float("inf"))
    if a.ids:
        lo, hi = (int(x) for x in a.ids.split("-"))
    pname, tname = {}, {}
    for e in d["traceEvents"]:
        if e.get("name") == "process_name":
            pname[e["pid"]] = e["args"]["name"]
        elif e.get("name") == "thread_name":
            tname[(e["pid"], e["tid"])] = e["args"]["name"]
    evs = [e for e in d["traceEvents"] if e.get("ph") == "X"
           and lo <= e["args"]["id"] <= hi]
    if not evs:
        raise SystemExit("no events to draw")
    t0 = min(e["ts"] for e in evs)
    t1 = max(e["ts"] + e["dur"] for e in evs)
    span = max(t1 - t0, 1.0)
    # rows: processes in order of their first event, then their threads
    first = {}
    for e in sorted(evs, key=lambda e: e["ts"]):
        first.setdefault(e["pid"], e["ts"])
        first.setdefault((e["pid"], e["tid"]), e["ts"])
    rows = sorted({(e["pid"], e["tid"]) for e in evs},
                  key=lambda r: (first[r[0]], first[r]))
    y = {r: i for i, r in enumerate(rows)}
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(rows) + 1.8), dpi=80)
    by_id = collections.defaultdict(list)
    for e in evs:
        x = e["ts"] - t0
        w = max(e["dur"], span / 1500)
        ax.barh(y[(e["pid"], e["tid"])], w, left=x, height=0.6,
                color=COLORS.get(e["name"], "#bcbd22"), linewidth=0)
        by_id[e["args"]["id"]].append(e)
    for evl in by_id.values():
        evl.sort(key=lambda e: e["ts"])
        ax.plot([e["ts"] - t0 for e in evl],
                [y[(e["pid"], e["tid"])] for e in evl],
                color="#555555", linewidth=0.5, alpha=0.6)
    labels = []
    for pid, tid in rows:
        # "client NAME (PID)", "pocld HOST:PORT session SID (PID)"
        full = pname.get(pid, str(pid))
        proc = full.split(" session ")[0].split(" (")[0]
        own_pid = full.rsplit("(", 1)[-1].rstrip(")")
        thread = "main" if str(tid) == own_pid else "thread"
        labels.append("%s\n%s %s" % (proc, thread, tid))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("microseconds (client clock)")
    ax.set_xlim(-span * 0.01, span * 1.01)
    names = [n for n in COLORS if any(e["name"] == n for e in evs)]
    ax.legend(handles=[matplotlib.patches.Patch(color=COLORS[n], label=n)
                       for n in names], fontsize=7, ncol=min(len(names), 7),
              loc="upper center", bbox_to_anchor=(0.5, -0.1 - 0.8 / len(rows)),
              frameon=False)
    if a.title:
        ax.set_title(a.title, fontsize=9)
    fig.tight_layout()
    fig.savefig(a.png, dpi=80)


if __name__ == "__main__":
    main()
