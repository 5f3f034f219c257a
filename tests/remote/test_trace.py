#!/usr/bin/env python3
"""remote/trace's checks of a merged trace (tools/trace_merge.py) of
test_trace.c through two servers:
    test_trace.py MERGED.json WRITE_BYTES KERNELS
- valid JSON, every event complete, every command's events linked by its
  flow (begun at the client's enqueue, ended at its completion);
- every kernel, write and read has enqueue, send, recv, native_enqueue,
  native_complete, completion_send, completion and complete, in that order
  once the servers' clocks are shifted onto the client's (exactly: one
  host's processes share CLOCK_MONOTONIC, which the merge must see);
- the write's bytes: sent as DATA (plus its 24-byte header), received and
  written natively in full; the read's bytes back in its completion;
- the migration between the servers: MIGRATE_IN and PUSH sent, the
  pushing server's PEER_DATA of all the bytes, received by the other, then
  the completion at the client.
Prints "trace: PASS" or "trace: FAIL: why" (exit status 1)."""
import collections
import json
import sys

NDRANGE, READ, WRITE, PUSH, MIGRATE_IN = 50, 51, 52, 65, 66
PEER_DATA, DATA = 101, 80
LIFE = ["enqueue", "send", "recv", "native_enqueue", "native_complete",
        "completion_send", "completion", "complete"]


def fail(why):
    print("trace: FAIL: %s" % why)
    sys.exit(1)


def main():
    path, write_bytes, kernels = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        with open(path) as f:
            d = json.load(f)
    except ValueError as e:
        fail("%s is not JSON: %s" % (path, e))
    meta = d["pocl_remote_merged"]
    if len(meta["clients"]) != 1 or len(meta["servers"]) != 2:
        fail("expected 1 client and 2 server traces, got %s" % meta)
    client_pid = meta["clients"][0]["pid"]
    tol = {}
    for s in meta["servers"]:
        if s["uncertainty_ns"] is None:
            fail("server trace %s has no clock offset" % s["file"])
        # every process of this test runs on this host: one clock
        if s["uncertainty_ns"] != 0:
            fail("server trace %s aligned by a measured offset, not as one "
                 "host's clock" % s["file"])
        tol[s["pid"]] = s["uncertainty_ns"] / 1000.0 + 1.0
    tol[client_pid] = 0.0

    cmds = collections.defaultdict(list)
    flows = collections.defaultdict(list)
    for e in d["traceEvents"]:
        if e["ph"] == "X":
            for k in ("name", "ts", "dur", "pid", "tid", "args"):
                if k not in e:
                    fail("event without %s: %s" % (k, e))
            cmds[e["args"]["id"]].append(e)
        elif e["ph"] in "stf":
            flows[e["id"]].append(e)
    for i, evs in cmds.items():
        fl = flows.get(i, [])
        if len(fl) != len(evs):
            fail("command %s: %d events, %d flow events" % (i, len(evs),
                                                            len(fl)))
        for e in evs:
            want = {"enqueue": "s", "complete": "f"}.get(e["name"], "t")
            if not any(f["ph"] == want and f["ts"] == e["ts"]
                       and f["pid"] == e["pid"] for f in fl):
                fail("command %s: %s has no flow event %s" % (i, e["name"],
                                                              want))

    def before(a, b):
        # a happened no later than b, within the clocks' uncertainty
        slack = 0.0 if a["pid"] == b["pid"] else tol[a["pid"]] + tol[b["pid"]]
        return a["ts"] <= b["ts"] + slack

    def first(evs, name, msg=None):
        for e in evs:
            if e["name"] == name and (msg is None or e["args"]["msg"] == msg):
                return e
        return None

    counts = collections.Counter()
    for i, evs in sorted(cmds.items()):
        evs.sort(key=lambda e: e["ts"])
        send = first(evs, "send")
        if send is None or send["args"]["msg"] not in (NDRANGE, READ, WRITE):
            continue
        kind = send["args"]["msg"]
        counts[kind] += 1
        life = []
        for n in LIFE:
            e = first(evs, n)
            if e is None:
                fail("command %s (message %d) has no %s event: %s"
                     % (i, kind, n, [x["name"] for x in evs]))
            if e["pid"] != (client_pid if n in ("enqueue", "send",
                                                "completion", "complete")
                            else evs[[x["name"] for x in evs].index(
                                "recv")]["pid"]):
                fail("command %s: %s in the wrong process" % (i, n))
            life.append(e)
        for a, b in zip(life, life[1:]):
            if not before(a, b):
                fail("command %s (message %d): %s at %.3f us after %s at "
                     "%.3f us (allowed %.3f us)"
                     % (i, kind, a["name"], a["ts"], b["name"], b["ts"],
                        tol[a["pid"]] + tol[b["pid"]]))
        if kind == WRITE:
            sd = first(evs, "send_data")
            dr = first(evs, "data_recv")
            if sd is None or dr is None:
                fail("write %s: no send_data or data_recv" % i)
            if sd["args"]["bytes"] != write_bytes + 24:
                fail("write %s: %d bytes sent as DATA, expected %d + 24"
                     % (i, sd["args"]["bytes"], write_bytes))
            if dr["args"]["bytes"] != write_bytes:
                fail("write %s: %d bytes received" % (i, dr["args"]["bytes"]))
            native = sum(e["args"]["bytes"] for e in evs
                         if e["name"] == "native_enqueue")
            if native != write_bytes:
                fail("write %s: %d bytes written natively" % (i, native))
            if not (before(sd, dr) and before(dr, first(evs, "native_enqueue"))):
                fail("write %s: data received out of order" % i)
        if kind == READ:
            for n in ("completion_send", "completion"):
                if first(evs, n)["args"]["bytes"] != write_bytes:
                    fail("read %s: %s carries %d bytes" % (
                        i, n, first(evs, n)["args"]["bytes"]))
    if counts[NDRANGE] != kernels or counts[WRITE] != 1 or counts[READ] != 2:
        fail("commands traced: %d kernels (expected %d), %d writes, %d reads"
             % (counts[NDRANGE], kernels, counts[WRITE], counts[READ]))

    migrations = 0
    for i, evs in cmds.items():
        msgs = {e["args"]["msg"] for e in evs if e["name"] == "send"}
        if not {PUSH, MIGRATE_IN} <= msgs:
            continue
        migrations += 1
        ps = first(evs, "peer_send", PEER_DATA)
        pr = first(evs, "peer_recv", PEER_DATA)
        if ps is None or pr is None:
            fail("migration %s: no PEER_DATA sent and received: %s"
                 % (i, [x["name"] for x in evs]))
        if ps["pid"] == pr["pid"] or ps["pid"] == client_pid:
            fail("migration %s: PEER_DATA not between the two servers" % i)
        sent = sum(e["args"]["bytes"] for e in evs if e["name"] == "peer_send")
        got = sum(e["args"]["bytes"] for e in evs if e["name"] == "peer_recv")
        if sent != write_bytes or got != write_bytes:
            fail("migration %s: %d bytes pushed, %d received, expected %d"
                 % (i, sent, got, write_bytes))
        done = first(evs, "complete")
        push = first(evs, "send", PUSH)
        if done is None or not (before(push, ps) and before(ps, pr)
                                and before(pr, done)):
            fail("migration %s: events out of order" % i)
    if migrations != 1:
        fail("%d migrations between servers traced, expected 1" % migrations)
    print("trace: PASS: %d commands traced across %d processes, clock "
          "uncertainty %s us" % (sum(counts.values()) + migrations,
                                 1 + len(meta["servers"]),
                                 sorted(round(t - 1.0, 1) for p, t in
                                        tol.items() if p != client_pid)))


if __name__ == "__main__":
    main()
