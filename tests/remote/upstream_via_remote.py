#!/usr/bin/env python3
"""Run PoCL's upstream test suite a second time, through the remote driver.

Two nested ctest runs over the same build tree, in this order:
  1. on the local pthread device (POCL_DEVICES=pthread): upstream's suite itself, which
     tools/test.sh leaves out of its own ctest run so that it runs once; any test that
     fails here fails this test;
  2. through the remote driver against the fixture's pocld (run_remote.sh sets
     POCL_DEVICES=remote and POCL_REMOTE0_PARAMETERS).
Both exclude our own tests (labels "remote", "clients", "cts" and "package"), so this test
never recurses and never starts a second fixture on the same state file. The remote run
skips the upstream tests that pin POCL_DEVICES in their ENVIRONMENT property (they would
run on that local device either way, so they say nothing about the remote driver).

A test that passes on pthread but not through remote fails this test unless its exact
name is the first column of a row in the exceptions file (doc/remote-test-exceptions.md)
with a non-empty reason; a third column "skip" keeps a test out of the remote run (for
tests that would wedge pocld for the tests after them). Both lists come from the same run, so no stored baseline goes
stale. Results land in --work: pthread.results, remote.results (name<TAB>status),
summary.txt and the nested ctest logs.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET


def log(msg):
    print(msg, flush=True)


def list_tests(ctest, nest_dir, env):
    """All tests of the build tree as {name: (labels, environment)}."""
    out = subprocess.run([ctest, "--show-only=json-v1"], cwd=nest_dir, env=env,
                         check=True, capture_output=True, text=True).stdout
    tests = {}
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels = props.get("LABELS", [])
        environ = props.get("ENVIRONMENT", [])
        tests[t["name"]] = (labels if isinstance(labels, list) else [labels],
                            environ if isinstance(environ, list) else [environ])
    return tests


def make_nest(work, name, build):
    """A directory whose CTestTestfile points at the build tree: ctest run there keeps
    its Testing/ logs (and the JUnit file) out of the build tree, so the outer ctest's
    logs are not clobbered. CTestCustom.cmake brings upstream's test environment."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "CTestTestfile.cmake"), "w") as f:
        f.write('subdirs("%s")\n' % build)
    with open(os.path.join(d, "CTestCustom.cmake"), "w") as f:
        f.write('include("%s/CTestCustom.cmake" OPTIONAL)\n' % build)
    return d


_nested = []  # process group of the running nested ctest, for the signal handler


def _kill_nested(signum, _frame):
    """Being stopped (outer ctest interrupted or timed out): take the nested ctest and
    its tests down with us, so no test keeps running against a stopped pocld."""
    for pgid in _nested:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    sys.exit(128 + signum)


def run_ctest(argv, cwd, env, budget, logfile):
    """Run a nested ctest in its own process group; kill the group past the budget."""
    log("+ (cd %s && %s)" % (cwd, " ".join(argv)))
    start = time.monotonic()
    with open(logfile, "w") as out:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
        _nested.append(p.pid)
        try:
            rc = p.wait(timeout=budget)
        except subprocess.TimeoutExpired:
            log("nested ctest exceeded its %ds budget: killing it" % budget)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
        finally:
            _nested.remove(p.pid)
    log("  finished in %.0fs (exit %s), log: %s" % (time.monotonic() - start, rc, logfile))
    return rc


def read_log(path):
    """Fallback when ctest was killed before writing its JUnit file: the per-test
    result lines of its output ("12/155 Test  #27: name ....   Passed  0.1 sec")."""
    results = {}
    pat = re.compile(r"^\s*\d+/\d+ Test +#\d+: (\S+) \.+\s*(\*\*\*)?(\w+)")
    for line in open(path, errors="replace"):
        m = pat.match(line)
        if m:
            word = m.group(3)
            results[m.group(1)] = ("passed" if word == "Passed" else
                                   "skipped" if word == "Skipped" else "failed")
    return results


def read_junit(path, logfile):
    """{name: 'passed'|'failed'|'skipped'} from ctest's --output-junit file."""
    results = {}
    if not os.path.exists(path):
        return read_log(logfile) if os.path.exists(logfile) else results
    for tc in ET.parse(path).getroot().iter("testcase"):
        status = tc.get("status")
        if status == "run" and tc.find("failure") is None:
            results[tc.get("name")] = "passed"
        elif status == "notrun" or tc.find("skipped") is not None:
            results[tc.get("name")] = "skipped"
        else:
            results[tc.get("name")] = "failed"
    return results


def read_exceptions(path):
    """({test name: reason}, {names to skip}) from the markdown table: first column the
    exact test name, second the reason, optional third "skip" (do not run it through
    remote at all: it would hang or wedge pocld for the tests after it)."""
    exc, skip = {}, set()
    if not os.path.exists(path):
        return exc, skip
    rows = 0
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            break  # the next section's table (the OpenCL-CTS one) is tools/cts.sh's
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows += 1
        if rows == 1 or all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            continue  # header row and separator row
        name = cells[0].strip("`")
        reason = cells[1] if len(cells) > 1 else ""
        if name and reason:
            exc[name] = reason
            if len(cells) > 2 and cells[2].strip("`* ").lower() == "skip":
                skip.add(name)
    return exc, skip


def pocld_alive(state):
    """Say so, with its log's tail, if the fixture's pocld died during the run."""
    st = {}
    if os.path.exists(state):
        for line in open(state):
            k, _, v = line.strip().partition("=")
            st[k] = v
    pid = st.get("POCLD_PID", "")
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            argv0 = f.read().split(b"\0")[0].decode(errors="replace")
        if os.path.basename(argv0) == "pocld":
            return True
    except (OSError, ValueError):
        pass
    log("pocld (pid %s) is gone after the remote run; its log: %s"
        % (pid or "?", st.get("POCLD_LOG", "?")))
    try:
        for line in open(st.get("POCLD_LOG", ""), errors="replace").readlines()[-30:]:
            log("  | " + line.rstrip())
    except OSError:
        pass
    return False


def write_results(path, results):
    with open(path, "w") as f:
        for name in sorted(results):
            f.write("%s\t%s\n" % (name, results[name]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="PoCL build directory")
    ap.add_argument("--state", required=True, help="pocld fixture state file")
    ap.add_argument("--run-remote", required=True, help="path of run_remote.sh")
    ap.add_argument("--exceptions", required=True, help="doc/remote-test-exceptions.md")
    ap.add_argument("--work", required=True, help="directory for logs and result lists")
    ap.add_argument("--ctest", default="ctest")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120, help="per nested test, seconds")
    ap.add_argument("--budget", type=int, default=1200, help="per nested run, seconds")
    args = ap.parse_args()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _kill_nested)
    build = os.path.abspath(args.build)
    work = os.path.abspath(args.work)
    # The nested runs have their own working directories.
    args.state = os.path.abspath(args.state)
    args.run_remote = os.path.abspath(args.run_remote)
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    env["OCL_ICD_VENDORS"] = os.path.join(build, "ocl-vendors")
    env["POCL_BUILDING"] = "1"

    for f in ("pthread.xml", "remote.xml", "pthread.log", "remote.log", "summary.txt"):
        if os.path.exists(os.path.join(work, f)):
            os.remove(os.path.join(work, f))
    pth = make_nest(work, "pthread", build)
    rem = make_nest(work, "remote", build)

    tests = list_tests(args.ctest, pth, env)
    ours = sorted(n for n, (labels, _) in tests.items()
                  if {"remote", "clients", "cts", "package"} & set(labels))
    pinned = sorted(n for n, (labels, environ) in tests.items()
                    if n not in ours
                    and any(e.startswith("POCL_DEVICES=") for e in environ))
    upstream = sorted(n for n in tests if n not in ours and n not in pinned)
    log("upstream tests: %d compared, %d skipped because they pin POCL_DEVICES: %s"
        % (len(upstream), len(pinned), ", ".join(pinned) or "none"))
    if not upstream:
        log("FAIL: no upstream tests found in %s" % build)
        return 1

    exceptions, skip = read_exceptions(args.exceptions)
    if skip:
        log("not run through remote (\"skip\" in %s): %s"
            % (os.path.basename(args.exceptions), ", ".join(sorted(skip))))

    def exclude(names):
        return ["-E", "|".join("^%s$" % re.sub(r"[^A-Za-z0-9_/-]", ".", n)
                               for n in sorted(names))] if names else []

    # -LE: never run our own tests (this one included); -E: the pinned ones, exactly.
    common = [args.ctest, "-LE", "^(remote|clients|cts|package)$", "-j%d" % args.jobs,
              "--timeout", str(args.timeout), "--no-tests=error"]

    # 1. Upstream's suite on the local pthread device, the pinned tests too.
    env_p = dict(env, POCL_DEVICES="pthread")
    env_p.pop("POCL_REMOTE0_PARAMETERS", None)
    run_ctest(common
              + ["--output-junit", os.path.join(work, "pthread.xml")], pth,
              env_p, args.budget, os.path.join(work, "pthread.log"))
    # 2. The same tests through the remote driver and the fixture's pocld.
    run_ctest([args.run_remote, args.state, build] + common
              + exclude(set(pinned) | (skip & set(upstream)))
              + ["--output-junit", os.path.join(work, "remote.xml")], rem,
              env, args.budget, os.path.join(work, "remote.log"))

    pocld_alive(args.state)

    res_p = read_junit(os.path.join(work, "pthread.xml"), os.path.join(work, "pthread.log"))
    res_r = read_junit(os.path.join(work, "remote.xml"), os.path.join(work, "remote.log"))
    for name in upstream + pinned:  # missing from a report (killed run): did not pass
        res_p.setdefault(name, "not-run")
        res_r.setdefault(name, "skipped-by-list" if name in skip else "not-run")
    write_results(os.path.join(work, "pthread.results"), res_p)
    write_results(os.path.join(work, "remote.results"), res_r)

    passed_p = {n for n in upstream if res_p[n] == "passed"}
    passed_r = {n for n in upstream if res_r[n] == "passed"}
    lost = sorted(passed_p - passed_r)
    documented = [n for n in lost if exceptions.get(n)]
    undocumented = [n for n in lost if not exceptions.get(n)]
    stale = sorted(n for n in exceptions if n in passed_r)
    unknown = sorted(n for n in exceptions if n not in tests)
    gained = sorted(passed_r - passed_p)
    failed_p = sorted(n for n in upstream + pinned if res_p[n] not in ("passed", "skipped"))

    lines = []
    for n in documented:
        lines.append("documented exception (%s via remote): %s -- %s"
                     % (res_r[n], n, exceptions[n]))
    for n in stale:
        lines.append("note: listed in %s but passes via remote now: %s"
                     % (os.path.basename(args.exceptions), n))
    for n in unknown:
        lines.append("note: listed in %s but no such test: %s"
                     % (os.path.basename(args.exceptions), n))
    for n in gained:
        lines.append("note: passes via remote but not on pthread (%s): %s" % (res_p[n], n))
    for n in undocumented:
        lines.append("REGRESSION (%s via remote, passed on pthread): %s" % (res_r[n], n))
    for n in failed_p:
        lines.append("FAILED on pthread (%s), upstream's suite: %s" % (res_p[n], n))
    lines.append("pthread: %d passed, remote: %d passed, %d documented exceptions"
                 % (len(passed_p), len(passed_r), len(documented)))
    if undocumented:
        lines.append("FAIL: %d tests pass on pthread but not via remote and are not in %s"
                     % (len(undocumented), args.exceptions))
    elif not passed_p:
        lines.append("FAIL: nothing passed on pthread, so the comparison means nothing")
    if failed_p:
        lines.append("FAIL: %d of upstream's tests fail on pthread (log: %s)"
                     % (len(failed_p), os.path.join(work, "pthread.log")))
    with open(os.path.join(work, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for line in lines:
        log(line)
    if undocumented:
        log("nested remote ctest log: %s" % os.path.join(work, "remote.log"))
    return 1 if undocumented or failed_p or not passed_p else 0


if __name__ == "__main__":
    sys.exit(main())
