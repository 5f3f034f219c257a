#!/usr/bin/env python3
"""Where the time of a chain and of a migration goes, from a merged PoCL-R
trace (tools/trace_merge.py; doc/tracing.md).

    tools/trace_stages.py MERGED.json [--chain N] [--commands | --round]

Chains: runs of N (default 100) consecutive NDRANGE enqueues, as
tools/bench/overhead_bench.c makes; per chain from the first enqueue to the
last completion at the client, and the median over the chain's commands
of each stage.

Commands (--commands): per CL_COMMAND_* type, the median of each stage of
a command's life (enqueue, send, pocld's receipt, its native enqueue and
completion, the COMPLETION sent and read, the event complete), for the
stream kernels' and the dot's read-back (tools/bench/overhead_bench.c
stream).

Round (--round): the last burst of commands that begins with NDRANGEs,
as a round of examples/remote/matmul makes (tools/bench.sh gpu-multi
traces one): per server when its kernels completed and each PEER_DATA it
received, in ms from the round's first enqueue.

Migrations: each clEnqueueMigrateMemObjects that moved bytes between two
servers (the client enqueues two migration commands within 100 us; a
PEER_DATA carries the bytes), grouped by size and direction: min, median
and p90 of the total and of each hop (client to source, source's receipt
to PEER_DATA sent and of that the source's read, PEER_DATA to its receipt,
receipt to COMPLETION sent and of that the destination's write until it
was seen complete, COMPLETION to the client), and beside them the
destination's native enqueue of the MIGRATE_IN (on its command reader,
while the source reads).  Hops from one process to another are exact only
within the servers' clock uncertainty, which it prints first.
"""
import argparse
import collections
import json

NDRANGE = 0x11F0
MIGRATE = 0x1206
PUSH, MIGRATE_IN = 65, 66


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(int(len(xs) * q), len(xs) - 1)]


def load(path):
    with open(path) as f:
        d = json.load(f)
    evs = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    names = {e["pid"]: e["args"]["name"] for e in d["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "process_name"}
    evs.sort(key=lambda e: e["ts"])
    by_id = collections.defaultdict(list)
    for e in evs:
        by_id[e["args"]["id"]].append(e)
    # Hops between processes are exact only within the servers' clock
    # uncertainty (doc/tracing.md, Clocks): a short one may come out negative.
    for sv in d.get("pocl_remote_merged", {}).get("servers", []):
        name = names.get(sv["pid"], sv["pid"])
        if sv["uncertainty_ns"] is None:
            print("server %s: not aligned (in no client's trace)" % name)
        elif sv["uncertainty_ns"] == 0:
            print("server %s: the client's host and clock" % name)
        else:
            print("server %s: clock uncertainty +-%.1f us" %
                  (name, sv["uncertainty_ns"] / 1e3))
    return evs, by_id, names


def first(evs, name, msg=None):
    for e in evs:
        if e["name"] == name and (msg is None or e["args"]["msg"] == msg):
            return e
    return None


def chains(evs, by_id, n):
    runs, cur = [], []
    for e in evs:
        if e["name"] != "enqueue":
            continue
        if e["args"]["msg"] == NDRANGE:
            cur.append(e["args"]["id"])
            continue
        if len(cur) == n:
            runs.append(cur)
        cur = []
    if len(cur) == n:
        runs.append(cur)
    if not runs:
        return
    stages = [("enqueue", "recv"), ("recv", "native_enqueue"),
              ("native_enqueue", "native_complete"),
              ("native_complete", "completion_send"),
              ("completion_send", "completion"), ("completion", "complete")]
    totals, gaps = [], collections.defaultdict(list)
    for run in runs:
        t = {i: {e["name"]: e for e in by_id[i]} for i in run}
        totals.append(t[run[-1]]["complete"]["ts"] - t[run[0]]["enqueue"]["ts"])
        enq = t[run[-1]]["enqueue"]["ts"] - t[run[0]]["enqueue"]["ts"]
        gaps["all enqueued"].append(enq)
        for a, b in stages:
            gaps[a + " -> " + b].append(
                pct([t[i][b]["ts"] - t[i][a]["ts"] for i in run], 0.5))
    print("%d chains of %d kernels: %.0f / %.0f / %.0f us (min / median / "
          "p90), first to last enqueue %.0f us (median)" %
          (len(runs), n, min(totals), pct(totals, 0.5), pct(totals, 0.9),
           pct(gaps["all enqueued"], 0.5)))
    for a, b in stages:
        print("  %-36s median over a chain: %7.1f us (median of chains)" %
              (a + " -> " + b, pct(gaps[a + " -> " + b], 0.5)))


STAGES = ["enqueue", "send", "recv", "native_enqueue", "native_complete",
          "completion_send", "completion", "complete"]
CL_COMMAND = {0x11F0: "NDRANGE", 0x11F3: "READ_BUFFER",
              0x11F4: "WRITE_BUFFER", 0x11F5: "COPY_BUFFER",
              0x1206: "MIGRATE_MEM_OBJECTS", 0x1207: "FILL_BUFFER",
              0x11FE: "MARKER"}


def commands(evs, by_id):
    """Per command type, the median time from one stage to the next, over
    the commands that have both (an untracked command has no native
    completion of its own)."""
    kinds = collections.defaultdict(list)
    for e in evs:
        if e["name"] == "enqueue":
            kinds[e["args"]["msg"]].append(e["args"]["id"])
    for kind, ids in sorted(kinds.items()):
        print("%s commands: %d" % (CL_COMMAND.get(kind, hex(kind)), len(ids)))
        firsts = []
        for i in ids:
            t = {}
            for e in by_id[i]:
                t.setdefault(e["name"], e)
            firsts.append(t)
        for a, b in zip(STAGES, STAGES[1:]):
            xs = [t[b]["ts"] - (t[a]["ts"] + t[a].get("dur", 0))
                  for t in firsts if a in t and b in t]
            if xs:
                print("  %-34s n %5d  min %8.1f  median %8.1f  p90 %8.1f us"
                      % ("end of " + a + " -> " + b, len(xs), min(xs),
                         pct(xs, 0.5), pct(xs, 0.9)))
        xs = [t["complete"]["ts"] - t["enqueue"]["ts"] for t in firsts
              if "complete" in t]
        if xs:
            print("  %-34s n %5d  min %8.1f  median %8.1f  p90 %8.1f us"
                  % ("enqueue -> complete", len(xs), min(xs), pct(xs, 0.5),
                     pct(xs, 0.9)))


def migrations(evs, by_id, names):
    mig = [e for e in evs if e["name"] == "enqueue"
           and e["args"]["msg"] == MIGRATE]
    groups = collections.defaultdict(list)
    i = 0
    while i + 1 < len(mig):
        a, b = mig[i], mig[i + 1]
        if b["ts"] - a["ts"] > 100:
            i += 1
            continue
        i += 2
        ev = sorted(by_id[a["args"]["id"]] + by_id[b["args"]["id"]],
                    key=lambda e: e["ts"])
        push = first(ev, "recv", PUSH)
        ps, pr = first(ev, "peer_send"), first(ev, "peer_recv")
        cs, cc = first(ev, "completion_send"), first(ev, "completion")
        done = [e for e in ev if e["name"] == "complete"]
        if None in (push, ps, pr, cs, cc) or not done:
            continue
        # The source's read (a blocking one for small pushes) and the
        # destination's write, where pocld traced them.
        rd = [e for e in ev if e["name"] == "native_enqueue"
              and e["pid"] == push["pid"] and e["ts"] >= push["ts"]]
        wr = [e for e in ev if e["name"] == "native_enqueue"
              and e["pid"] == pr["pid"] and e["ts"] >= pr["ts"]]
        nc = [e for e in ev if e["name"] == "native_complete"
              and e["pid"] == pr["pid"] and e["ts"] >= pr["ts"]]
        mi = [e for e in ev if e["name"] == "native_enqueue"
              and e["args"]["msg"] == MIGRATE_IN]
        size = sum(e["args"]["bytes"] for e in ev if e["name"] == "peer_send")
        t0 = a["ts"]
        key = (size, names.get(push["pid"], push["pid"]))
        read_end = rd[0]["ts"] + rd[0].get("dur", 0) if rd else None
        written = nc[-1]["ts"] if nc else None
        groups[key].append((
            max(e["ts"] for e in done) - t0, push["ts"] - t0,
            ps["ts"] - push["ts"],
            None if read_end is None else read_end - push["ts"],
            pr["ts"] - ps["ts"], cs["ts"] - pr["ts"],
            None if written is None else written - pr["ts"],
            cc["ts"] - cs["ts"], mi[0].get("dur") if mi else None))
    hops = ["total", "client -> source's receipt", "receipt -> PEER_DATA",
            "  of which the read", "PEER_DATA -> its receipt",
            "receipt -> COMPLETION sent", "  of which the write",
            "COMPLETION -> client", "(MIGRATE_IN's native enqueue)"]
    for (size, src), v in sorted(groups.items()):
        print("migrations of %d bytes, PUSH to %s: %d" % (size, src, len(v)))
        for j, h in enumerate(hops):
            xs = [x[j] for x in v if x[j] is not None]
            if xs:
                print("  %-30s min %9.1f  median %9.1f  p90 %9.1f us" %
                      (h, min(xs), pct(xs, 0.5), pct(xs, 0.9)))


def last_round(evs, names):
    """The last burst of commands that begins with NDRANGEs (a round of
    examples/remote/matmul, traced by tools/bench.sh gpu-multi): its length, and
    per server when its kernels completed and each PEER_DATA it received
    (ms from the round's first enqueue: at, bytes, how long it took)."""
    enq = [e for e in evs if e["name"] == "enqueue"]
    nd = [e for e in enq if e["args"].get("msg") == NDRANGE]
    if not nd:
        return
    start = nd[-1]["ts"]
    for e in reversed(nd):
        if start - e["ts"] > 10000:
            break
        start = e["ts"]
    ids, last = set(), start
    for e in enq:
        if e["ts"] < start:
            continue
        if e["ts"] - last > 10000:
            break
        ids.add(e["args"]["id"])
        last = e["ts"]
    done = [e["ts"] for e in evs
            if e["name"] == "complete" and e["args"]["id"] in ids]
    end = max(done)
    kernels = {e["args"]["id"] for e in nd if e["args"]["id"] in ids}
    ms = lambda t: (t - start) / 1e3
    print("round: %d commands, %.2f ms from the first enqueue to the last "
          "completion" % (len(ids), ms(end)))
    for pid in sorted(names):
        mine = [e for e in evs if e["pid"] == pid and start <= e["ts"] <= end]
        ends = [ms(e["ts"]) for e in mine if e["name"] == "native_complete"
                and e["args"]["id"] in kernels]
        data = ["%.2f: %d MiB in %.2f ms" % (ms(e["ts"]), e["args"]["bytes"] >> 20,
                                             e["dur"] / 1e3)
                for e in mine if e["name"] == "peer_recv"
                and e["args"].get("msg") == 101 and e["args"]["bytes"] > 0]
        if not ends and not data:
            continue
        print("  %s" % names[pid])
        if ends:
            print("    kernels completed at " +
                  " ".join("%.2f" % t for t in ends))
        for d in data:
            print("    PEER_DATA at " + d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("merged")
    ap.add_argument("--chain", type=int, default=100)
    ap.add_argument("--commands", action="store_true",
                    help="stages per command type")
    ap.add_argument("--round", action="store_true",
                    help="the last round of a traced matmul, per server")
    a = ap.parse_args()
    evs, by_id, names = load(a.merged)
    if a.round:
        last_round(evs, names)
        return
    if a.commands:
        commands(evs, by_id)
    chains(evs, by_id, a.chain)
    migrations(evs, by_id, names)


if __name__ == "__main__":
    main()
