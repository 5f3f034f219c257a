#!/usr/bin/env python3
"""Merges PoCL-R command traces (doc/tracing.md) into one Chrome trace-event
JSON file: the clients' files (POCL_REMOTE_TRACE) and pocld's session files
(pocld --trace PREFIX: PREFIX.<session>.json), with every server's
timestamps shifted onto its client's clock: exactly where both ran on one
boot of one host (the same boot id), else by the offset that the client
measured (CLOCK requests, the sample of the shortest round trip).

    tools/trace_merge.py -o merged.json client.json server-*.json

Open the result in https://ui.perfetto.dev or chrome://tracing.
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        d = json.load(f)
    meta = d.get("pocl_remote")
    if not isinstance(meta, dict) or meta.get("role") not in ("client",
                                                              "server"):
        sys.exit("%s: not a PoCL-R trace (no pocl_remote metadata)" % path)
    return d, meta


def merge(paths):
    files = [(p,) + load(p) for p in paths]
    clients = [f for f in files if f[2]["role"] == "client"]
    servers = [f for f in files if f[2]["role"] == "server"]
    # session id -> (client number, server entry of that client)
    sessions = {}
    for k, (_, _, meta) in enumerate(clients):
        for s in meta.get("servers", []):
            sessions.setdefault(s["session"], (k, s))
    used_pids = set()
    out = []
    merged_meta = {"clients": [], "servers": []}

    def fresh_pid(pid):
        while pid in used_pids:
            pid += 1000000
        used_pids.add(pid)
        return pid

    def flow_id(k, i):
        # ids are event ids, unique within one client
        return i if len(clients) < 2 else "%d:%s" % (k, i)

    for k, (path, d, meta) in enumerate(clients):
        pid = fresh_pid(meta["pid"])
        for e in d["traceEvents"]:
            e = dict(e, pid=pid)
            if e.get("cat") == "flow":
                e["id"] = flow_id(k, e["id"])
            out.append(e)
        merged_meta["clients"].append({"file": path, "pid": pid})
    for path, d, meta in servers:
        k, s = sessions.get(meta["session"], (None, None))
        pid = fresh_pid(meta["pid"])
        shift_us = 0.0
        name = None
        if s is None:
            print("%s: session %s is in no client's trace: its clock is left "
                  "as it is" % (path, meta["session"]), file=sys.stderr)
        else:
            offset_ns, uncertainty_ns = s["offset_ns"], s["rtt_ns"] // 2
            cmeta = clients[k][2]
            if cmeta.get("boot_id") and cmeta["boot_id"] == meta.get("boot_id"):
                # One boot of one host: one CLOCK_MONOTONIC, less the
                # offsets of the processes' time namespaces.
                offset_ns = (meta.get("monotonic_offset_ns", 0)
                             - cmeta.get("monotonic_offset_ns", 0))
                uncertainty_ns = 0
            shift_us = -offset_ns / 1000.0
            name = "pocld %s:%d session %s (%d)" % (
                s["host"], s["port"], meta["session"][:8], meta["pid"])
        for e in d["traceEvents"]:
            e = dict(e, pid=pid)
            if "ts" in e:
                e["ts"] = round(e["ts"] + shift_us, 3)
            if e.get("cat") == "flow":
                e["id"] = flow_id(k if k is not None else len(clients),
                                  e["id"])
            if e.get("name") == "process_name" and name:
                e["args"] = {"name": name}
            out.append(e)
        merged_meta["servers"].append({
            "file": path, "pid": pid, "session": meta["session"],
            "client": k,
            "offset_ns": offset_ns if s else None,
            "uncertainty_ns": uncertainty_ns if s else None,
        })
    out.sort(key=lambda e: (e.get("ph") != "M", e.get("ts", 0)))
    return {"displayTimeUnit": "ns", "pocl_remote_merged": merged_meta,
            "traceEvents": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    m = merge(a.traces)
    with open(a.output, "w") as f:
        json.dump(m, f, separators=(",", ":"))
        f.write("\n")
    n = sum(1 for e in m["traceEvents"] if e.get("ph") == "X")
    print("%s: %d events of %d processes" % (
        a.output, n, len(m["pocl_remote_merged"]["clients"])
        + len(m["pocl_remote_merged"]["servers"])))


if __name__ == "__main__":
    main()
