#!/usr/bin/env python3
"""The table of tools/cts.sh: per CTS binary, sub-tests passed/total on the local device and
through remote, and the sub-tests whose results differ. Exit 1 when remote does not pass a
sub-test that passes locally and doc/remote-test-exceptions.md's "OpenCL-CTS" section does not
list it (as `test_<binary>/<sub-test>` with a reason), or when nothing passed locally.

Per run, --work holds <binary>.list (every sub-test, from `-list`), <binary>.args (the
reduction), <binary>.<mode>.json (the harness's CL_CONFORMANCE_RESULTS_FILENAME, written
only when the binary finishes), <binary>.<mode>.log and <binary>.<mode>.rc ("status seconds").
A binary that did not finish (crash, timeout) has no JSON: its log says which sub-tests ran
("<name>..." then "<name> passed" / "<name> FAILED" / "... not supported" / "skipped"), the
one it was in is "crash" (or "timeout"), the rest "not run"."""

import argparse
import datetime
import json
import os
import re
import signal
import sys

SECTION = "## OpenCL-CTS"


def read_exceptions(path):
    """{"test_<binary>/<sub-test>": reason} from the table of the OpenCL-CTS section."""
    exc = {}
    if not os.path.exists(path):
        return exc
    inside, rows = False, 0
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            inside = line.startswith(SECTION)
            continue
        line = line.strip()
        if not inside or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows += 1
        if rows == 1 or all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            continue  # header row and separator row
        name = cells[0].strip("`")
        reason = cells[1] if len(cells) > 1 else ""
        if name and reason:
            exc[name] = reason
    return exc


def selected(names, args):
    """The sub-tests the harness runs for these arguments: every one without names, else
    the named ones (a trailing '*' matches a prefix, as the harness does)."""
    picks = [a for a in args if not re.fullmatch(r"\d+|randomize|pid\d+|id\d+", a)]
    if not picks:
        return list(names)
    out = []
    for n in names:
        for a in picks:
            if (a.endswith("*") and n.startswith(a[:-1])) or n == a:
                out.append(n)
                break
    return out


def from_log(path, names, how_it_ended):
    """Statuses from the log of a binary that did not finish."""
    res, current = {}, None
    known = set(names)
    for line in open(path, errors="replace") if os.path.exists(path) else []:
        line = line.rstrip("\n")
        if line.endswith("...") and line[:-3] in known:
            current = line[:-3]
            continue
        m = re.match(r"(\S+) (passed|FAILED|test not supported|test currently not implemented"
                     r"|skipped \(requires)", line)
        if m and m.group(1) in known:
            res[m.group(1)] = {"passed": "pass", "FAILED": "fail"}.get(m.group(2), "skip")
            if m.group(1) == current:
                current = None
    if current is not None:
        res[current] = how_it_ended
    for n in names:
        res.setdefault(n, "not run")
    return res


def results(work, b, mode, names):
    """({sub-test: status}, note on how the run ended)."""
    rc_path = os.path.join(work, "%s.%s.rc" % (b, mode))
    if not os.path.exists(rc_path):
        return {n: "not run" for n in names}, "not run (budget spent)"
    rc, secs = (int(x) for x in open(rc_path).read().split())
    jpath = os.path.join(work, "%s.%s.json" % (b, mode))
    if os.path.exists(jpath):
        try:
            got = json.load(open(jpath))["results"]
            res = {n: got.get(n, "not run") for n in names}
            return res, "%d s" % secs
        except (ValueError, KeyError):
            pass
    if rc in (124, 137):
        how, note = "timeout", "timed out after %d s" % secs
    elif rc > 128:
        try:
            sig = signal.Signals(rc - 128).name
        except ValueError:
            sig = "signal %d" % (rc - 128)
        how, note = "crash", "died of %s after %d s" % (sig, secs)
    else:
        how, note = "crash", "exit %d without results after %d s" % (rc, secs)
    res = from_log(os.path.join(work, "%s.%s.log" % (b, mode)), names, how)
    crashed_in = [n for n, s in res.items() if s == how]
    if crashed_in:
        note += " in " + crashed_in[0]
    return res, note


def json_names(work, b):
    """The sub-tests either run's JSON results name: the list of a binary whose own
    parser refuses -list (test_half) or runs its tests instead (test_select)."""
    out = set()
    for mode in ("local", "remote"):
        try:
            out.update(json.load(open(os.path.join(work, "%s.%s.json" % (b, mode))))["results"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return sorted(out)


def whole(work, b, mode):
    """A binary without any sub-test list, judged whole by its exit status."""
    rc_path = os.path.join(work, "%s.%s.rc" % (b, mode))
    if not os.path.exists(rc_path):
        return {WHOLE: "not run"}, "not run (budget spent)"
    rc, secs = (int(x) for x in open(rc_path).read().split())
    return {WHOLE: "pass" if rc == 0 else "fail"}, "exit %d after %d s" % (rc, secs)


WHOLE = "(whole binary)"


def device(work, mode):
    """The device as the harness names it ("Compute Device Name = ..., Compute Device
    Version = ..."), from the first log of that run that has it."""
    for name in sorted(os.listdir(work)):
        if not name.endswith(".%s.log" % mode):
            continue
        for line in open(os.path.join(work, name), errors="replace"):
            m = re.match(r"Compute Device Name = (.*?), Compute Device Vendor = .*?, "
                         r"Compute Device Version = (.*?),", line)
            if m:
                return "%s (%s)" % (m.group(1), m.group(2))
    return "unknown (no log names it)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--exceptions", required=True)
    ap.add_argument("--binaries", nargs="+", required=True)
    ap.add_argument("--commit", default="?", help="the repository's commit, for the record")
    args = ap.parse_args()
    exc = read_exceptions(args.exceptions)

    rows, lost, documented, stale, total_local = [], [], [], [], 0
    for b in args.binaries:
        binary = "test_" + b
        if os.path.exists(os.path.join(args.work, b + ".notbuilt")):
            rows.append((binary, "not built", "not built", ""))
            lost.append(binary + " (not built)")
            continue
        names = open(os.path.join(args.work, b + ".list")).read().split()
        run_args = open(os.path.join(args.work, b + ".args")).read().split()
        names = selected(names or json_names(args.work, b), run_args)
        if names:
            loc, loc_note = results(args.work, b, "local", names)
            rem, rem_note = results(args.work, b, "remote", names)
        else:
            names = [WHOLE]
            loc, loc_note = whole(args.work, b, "local")
            rem, rem_note = whole(args.work, b, "remote")
        n_loc = sum(s == "pass" for s in loc.values())
        n_rem = sum(s == "pass" for s in rem.values())
        total_local += n_loc
        diff, unrun = [], []
        for n in names:
            if loc[n] == rem[n]:
                continue
            if rem[n] == "not run" and loc[n] == "pass":
                unrun.append(n)  # after a crash: the log has them, the table counts them
            else:
                diff.append("%s (%s/%s)" % (n, loc[n], rem[n]))
            if loc[n] == "pass":
                key = "%s/%s" % (binary, n)
                (documented if key in exc else lost).append(key)
        for key in exc:
            kb, _, kn = key.partition("/")
            if kb == binary and rem.get(kn) == "pass":
                stale.append(key)
        def count(res, n_pass, note):
            skipped = sum(s == "skip" for s in res.values())
            return "%d/%d%s, %s" % (n_pass, len(names),
                                    " (%d skipped)" % skipped if skipped else "", note)
        red = " (args: %s)" % " ".join(run_args) if run_args else ""
        rows.append((binary + red,
                     count(loc, n_loc, loc_note), count(rem, n_rem, rem_note),
                     ", ".join(diff + (["%d%s sub-test%s pass/not run" % (len(unrun), " more" if diff else "",
                                                  "s" if len(unrun) > 1 else "")] if unrun else []))
                     or "none"))

    table = ["| Binary | Local: passed/total | Remote: passed/total | Differ (local/remote) |",
             "| ------ | ------------------- | -------------------- | --------------------- |"]
    table += ["| %s |" % " | ".join(r) for r in rows]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = "%s, commit %s. Local: %s. Remote: %s." % (
        when, args.commit, device(args.work, "local"), device(args.work, "remote"))
    text = "\n".join([head, ""] + table) + "\n"
    with open(os.path.join(args.work, "results.md"), "w") as f:
        f.write(text)
    print(text)
    for key in documented:
        print("cts: documented exception: %s -- %s" % (key, exc[key]))
    for key in stale:
        print("cts: note: listed in %s but passes through remote now: %s"
              % (os.path.basename(args.exceptions), key))
    print("cts: table in %s" % os.path.join(args.work, "results.md"))
    if lost:
        print("cts: FAIL: %d sub-tests pass locally but not through remote and are not in %s: %s"
              % (len(lost), args.exceptions, " ".join(lost)))
        return 1
    if total_local == 0:
        print("cts: FAIL: nothing passed locally, so the comparison means nothing")
        return 1
    print("cts: PASS: every sub-test that passes locally passes through remote")
    return 0


if __name__ == "__main__":
    sys.exit(main())
