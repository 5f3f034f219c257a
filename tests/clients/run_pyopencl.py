#!/usr/bin/env python3
"""clients/pyopencl: pyopencl's own test suite through the remote device.

Two pytest runs of the suite (the sdist's test/ directory, set up by setup_clients.sh),
at once, each in its own process group:
  local:  POCL_DEVICES=pthread, this build's libpocl (OCL_ICD_VENDORS),
  remote: through run_remote.sh, i.e. POCL_DEVICES=remote against the fixture's pocld,
which serves that same pthread device. pyopencl's tests take every device of every
platform (its ctx_factory fixture), so each run sees exactly one device.

Verdict, from the two JUnit files: a test that passes locally but not through remote
fails this test unless the exceptions file (doc/clients.md) has a row for it with a
reason; so does a run that crashed or passed nothing. A listed test that passes on
both gets a note (remove its row). Test ids are shown without the device parameter
(e.g. test/test_array.py::test_sum[float32]); a row may name a whole test function or
file.
Tests excluded from both runs for time (--deselect rows of the file) are listed too.
Exit status 77 (CTest SKIP_RETURN_CODE) if pyopencl is not installed.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

NAME = "clients/pyopencl"
# pyopencl's device parameter: "<context factory for <pyopencl.Device '...' on '...'>>"
CTX_PARAM = re.compile(r"<context factory for <pyopencl\.Device .*? on .*?>>-?")


def log(msg):
    print("%s: %s" % (NAME, msg), flush=True)


def norm_id(classname, name):
    """JUnit (classname, name) -> 'test/test_x.py::test_f[params]' without the device."""
    parts = classname.split(".")
    path = "/".join(parts[:-1]) + "/" + parts[-1] + ".py" if len(parts) > 1 else parts[0]
    name = CTX_PARAM.sub("", name).replace("[]", "")
    if name.endswith("-]"):
        name = name[:-2] + "]"
    return "%s::%s" % (path, name)


def norm_nodeid(nodeid):
    """pytest node id -> the same form as norm_id."""
    nodeid = CTX_PARAM.sub("", nodeid).replace("[]", "")
    return nodeid[:-2] + "]" if nodeid.endswith("-]") else nodeid


def read_junit(path):
    """{test id: (outcome, message)}, outcome in passed/failed/error/skipped/xfailed."""
    results = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        tid = norm_id(case.get("classname", ""), case.get("name", ""))
        outcome, msg = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, msg = ("failed" if child.tag == "failure" else "error"), child.get("message", "")
                break
            if child.tag == "skipped":
                xfail = child.get("type") == "pytest.xfail"
                outcome, msg = ("xfailed" if xfail else "skipped"), child.get("message", "")
        results[tid] = (outcome, msg.splitlines()[0][:160] if msg else "")
    return results


def read_rows(path, section):
    """Rows '| `id` | reason | [deselect] |' of the table under heading SECTION."""
    rows, inside = {}, False
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                inside = line.strip("# \n") == section
                continue
            if not inside or not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            tid = cells[0].strip("`")
            if not tid.startswith("test/") or len(cells) < 2 or not cells[1]:
                continue
            rows[tid] = (cells[1], len(cells) > 2 and cells[2].strip("` ") == "deselect")
    return rows


def listed(tid, rows):
    """The row naming this test, its whole function or its file, or None."""
    return rows.get(tid) or rows.get(tid.split("[")[0]) or rows.get(tid.split("::")[0])


def start(label, argv, env, work):
    """Start one pytest run in a directory of its own (some tests write to the cwd)."""
    cwd = os.path.join(work, label)
    os.makedirs(cwd, exist_ok=True)
    out = open(os.path.join(work, label + ".log"), "w")
    shown = [a for a in argv if not a.startswith("test/") and a != "--deselect"]
    log("+ [%s] %s (%d deselected)" % (label, " ".join(shown), argv.count("--deselect")))
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True), out


_groups = []


def _kill_all(signum, _frame):
    """Stopped by ctest (timeout): take both pytest runs down with us."""
    for pgid in _groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    sys.exit(128 + signum)


def summary(res):
    counts = {}
    for outcome, _ in res.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return ", ".join("%d %s" % (counts.get(k, 0), k)
                     for k in ("passed", "failed", "error", "skipped", "xfailed"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", required=True)
    ap.add_argument("--tests", required=True, help="the unpacked sdist (with test/)")
    ap.add_argument("--build", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--run-remote", required=True)
    ap.add_argument("--exceptions", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=int, default=300, help="per test (pytest-timeout)")
    ap.add_argument("--budget", type=int, default=1500, help="per run, seconds")
    args = ap.parse_args()

    python = os.path.join(args.venv, "bin", "python")
    if not os.access(python, os.X_OK) or not os.path.isdir(os.path.join(args.tests, "test")):
        log("SKIP: pyopencl is not installed in %s (tools/setup.sh runs "
            "tests/clients/setup_clients.sh, which needs PyPI)" % args.venv)
        return 77
    os.makedirs(args.work, exist_ok=True)
    rows = read_rows(args.exceptions, "pyopencl: tests that differ")
    deselect = sorted(t for t, (_, d) in rows.items() if d)

    pytest = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs",
              "--timeout=%d" % args.timeout, "-o", "junit_family=xunit1"]
    base = dict(os.environ, OCL_ICD_VENDORS=os.path.join(args.build, "ocl-vendors"),
                POCL_BUILDING="1", PYTHONDONTWRITEBYTECODE="1")
    base.pop("PYOPENCL_TEST", None)
    # pyopencl caches program binaries per user; a private cache per run keeps
    # earlier runs (or the other run) from turning builds into cache hits. PoCL's
    # kernel cache, below the API, is the one the fixture's pocld uses (PoCL's default
    # under the caller's XDG_CACHE_HOME or ~/.cache): the same device compiles each
    # kernel once for both runs, and every build still goes through the remote device.
    pocl_cache = os.path.join(os.environ.get("XDG_CACHE_HOME")
                              or os.path.join(os.path.expanduser("~"), ".cache"),
                              "pocl", "kcache")
    env_local = dict(base, POCL_DEVICES="pthread", POCL_CACHE_DIR=pocl_cache,
                     XDG_CACHE_HOME=os.path.join(args.work, "cache-local"))
    env_local.pop("POCL_REMOTE0_PARAMETERS", None)
    env_remote = dict(base, XDG_CACHE_HOME=os.path.join(args.work, "cache-remote"))

    signal.signal(signal.SIGTERM, _kill_all)
    signal.signal(signal.SIGINT, _kill_all)
    runs = {}
    testdir = os.path.join(os.path.abspath(args.tests), "test")
    for label, prefix, env in (("local", [], env_local),
                               ("remote", [args.run_remote, args.state, args.build], env_remote)):
        junit = os.path.join(args.work, label + ".xml")
        if os.path.exists(junit):
            os.remove(junit)
        argv = prefix + pytest + ["--junitxml=" + junit]
        # Node ids carry the device's name, so the deselected ones are looked up in a
        # collection on the same device (pytest's --deselect takes exact id prefixes).
        if deselect:
            ids = subprocess.run(prefix + pytest + ["--collect-only", testdir], env=env,
                                 cwd=args.work, capture_output=True, text=True,
                                 timeout=120).stdout
            for nodeid in ids.splitlines():
                if "::" in nodeid and listed(norm_nodeid(nodeid), {t: 1 for t in deselect}):
                    argv += ["--deselect", nodeid]
        proc, out = start(label, argv + [testdir], env, args.work)
        _groups.append(proc.pid)
        runs[label] = (proc, out, junit)

    deadline = time.monotonic() + args.budget
    failures = []
    results = {}
    for label, (proc, out, junit) in runs.items():
        try:
            rc = proc.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = "killed after the %d s budget" % args.budget
        out.close()
        if not os.path.exists(junit):
            failures.append("%s run left no JUnit file (exit %s); see %s.log"
                            % (label, rc, os.path.join(args.work, label)))
            continue
        results[label] = read_junit(junit)
        log("%s: %s (pytest exit %s)" % (label, summary(results[label]), rc))
    if failures:
        for f in failures:
            log("FAIL: " + f)
        return 1

    loc, rem = results["local"], results["remote"]
    passed_local = {t for t, (o, _) in loc.items() if o == "passed"}
    passed_remote = {t for t, (o, _) in rem.items() if o == "passed"}
    if not passed_remote:
        log("FAIL: no test passed through remote")
        return 1
    explained = 0
    for t in sorted(passed_local - passed_remote):
        outcome, msg = rem.get(t, ("not run", ""))
        row = listed(t, rows)
        if row:
            explained += 1
            log("differs as documented: %s: %s through remote (%s)" % (t, outcome, row[0]))
        else:
            failures.append("%s passes on pthread, %s through remote%s"
                            % (t, outcome, ": " + msg if msg else ""))
    for t in sorted(passed_remote - passed_local):
        log("note: %s passes through remote but is %s on pthread" % (t, loc.get(t, ("not run",))[0]))
    for t, (reason, dsel) in sorted(rows.items()):
        both = [x for x in passed_local & passed_remote if listed(x, {t: 1})]
        if dsel:
            log("deselected in both runs: %s (doc/clients.md says why)" % t)
        elif both:
            log("note: listed but passes on both: %s (remove its row)" % t)
    for f in failures:
        log("FAIL: " + f)
    if failures:
        return 1
    log("PASS: %d passed through remote, %d on pthread; %d pass on pthread only, all "
        "documented" % (len(passed_remote), len(passed_local), explained))
    return 0


if __name__ == "__main__":
    sys.exit(main())
