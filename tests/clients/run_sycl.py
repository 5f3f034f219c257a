#!/usr/bin/env python3
"""clients/dpctl, clients/dpnp: a SYCL package's own test suite through the remote device.

The suite (PACKAGE/tests, shipped in the wheel that setup_sycl.sh installs into
BUILD_ROOT/venv-sycl) runs twice, at once, under Intel's SYCL runtime:
  local:  Intel's OpenCL CPU runtime as the only OpenCL platform
          (OCL_ICD_VENDORS=BUILD_ROOT/vendors/intel),
  remote: this build's libpocl as the only platform, POCL_DEVICES=remote (run_remote.sh)
          against the "pocld_intel" fixture's pocld, which serves that same runtime.
Both select ONEAPI_DEVICE_SELECTOR='*:cpu': with this runtime (2026.2) the OpenCL
adapter is built into the UR loader, and a selector naming the backend ('opencl:cpu')
filters it out and finds no device.

By default only the CI subset runs: the files of the table "PACKAGE: the CI subset" of
doc/clients.md. --full runs the whole suite (without the tests the package marks slow),
or the files that CLIENTS_SYCL_FILES names (paths from site-packages, space-separated),
in parts (chunks below), each in processes of its own: the SYCL runtime, and pocld for
it, keep every program a process built, which for the whole dpnp suite in one process
would outgrow the machine's memory.
Verdict (pytest_compare.py) against the table "PACKAGE: tests that differ"; a run that
crashes goes on without the test it crashed in, which counts as "crashed".
Exit status 77 (CTest SKIP_RETURN_CODE) if the package is not installed, or with --full
unless CLIENTS_SYCL_FULL=1 is set (the whole suites take too long for CI).
"""

import argparse
import os
import re
import subprocess
import sys
import time

from pytest_compare import Resuming, Suite, read_rows

# The remote device's name ends in its server's address; ids must not depend on it.
REMOTE_SUFFIX = re.compile(r" \(pocl-remote [^)]*\)")


def norm(tid):
    return REMOTE_SUFFIX.sub("", tid)


def has_tests(path):
    return any(f.startswith("test_") and f.endswith(".py")
               for _, _, files in os.walk(path) for f in files)


def chunks(path):
    """The parts PATH runs in: a file, or a directory without test directories below
    it, is one; any other directory is its test files and test directories, each
    split the same way."""
    if not os.path.isdir(path):
        return [path]
    entries = sorted(os.path.join(path, e) for e in os.listdir(path))
    dirs = [e for e in entries if os.path.isdir(e) and has_tests(e)]
    if not dirs:
        return [path]
    files = [e for e in entries if os.path.isfile(e)
             and os.path.basename(e).startswith("test_") and e.endswith(".py")]
    return files + [c for d in dirs for c in chunks(d)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", required=True, choices=("dpctl", "dpnp"))
    ap.add_argument("--venv", required=True, help="BUILD_ROOT/venv-sycl")
    ap.add_argument("--vendors", required=True, help="ICD directory of Intel's runtime")
    ap.add_argument("--build", required=True)
    ap.add_argument("--state", required=True, help="the pocld_intel fixture's state")
    ap.add_argument("--run-remote", required=True)
    ap.add_argument("--exceptions", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--full", action="store_true", help="the whole suite, not the subset")
    ap.add_argument("--timeout", type=int, default=120, help="per test (pytest-timeout)")
    ap.add_argument("--budget", type=int, default=300, help="all runs, seconds")
    args = ap.parse_args()

    pkg = args.package
    suite = Suite("clients/%s%s" % (pkg, "_full" if args.full else ""), "Intel's runtime", norm)
    python = os.path.join(args.venv, "bin", "python")
    site = None
    if os.access(python, os.X_OK):
        site = subprocess.run([python, "-c", "import %s, os; print(os.path.dirname("
                               "os.path.dirname(%s.__file__)))" % (pkg, pkg)],
                              capture_output=True, text=True).stdout.strip()
    if not site or not os.path.isdir(os.path.join(site, pkg, "tests")):
        suite.log("SKIP: %s is not installed in %s (tools/setup.sh runs "
                  "tests/clients/setup_sycl.sh, which needs PyPI)" % (pkg, args.venv))
        return 77
    if not os.path.isfile(os.path.join(args.vendors, "intel-cpu.icd")):
        suite.log("SKIP: no %s/intel-cpu.icd (tests/clients/setup_clients.sh writes it)"
                  % args.vendors)
        return 77
    if args.full and os.environ.get("CLIENTS_SYCL_FULL") != "1":
        suite.log("SKIP: the whole suite runs only with CLIENTS_SYCL_FULL=1 "
                  "(doc/clients.md, SYCL)")
        return 77

    if args.full:
        files = os.environ.get("CLIENTS_SYCL_FILES", "").split()
        targets = [os.path.join(site, f) for f in files] or [os.path.join(site, pkg, "tests")]
        missing = [f for f in files
                   if not f.startswith(pkg + "/") or not os.path.exists(os.path.join(site, f))]
        if missing:
            suite.log("FAIL: CLIENTS_SYCL_FILES names what %s does not have: %s (paths from "
                      "site-packages, e.g. %s/tests/test_x.py)" % (pkg, " ".join(missing), pkg))
            return 1
    else:
        subset = read_rows(args.exceptions, "%s: the CI subset" % pkg, (pkg + "/",))
        if not subset:
            suite.log("FAIL: no table '%s: the CI subset' in %s" % (pkg, args.exceptions))
            return 1
        targets = [os.path.join(site, t) for t in sorted(subset)]
    rows = read_rows(args.exceptions, "%s: tests that differ" % pkg, (pkg + "/",))
    deselect = [t for t, (_, d) in rows.items() if d]
    os.makedirs(args.work, exist_ok=True)

    # --rootdir: ids relative to site-packages (dpnp/tests/test_x.py::...), the form of
    # doc/clients.md's rows and of dpnp's own skip lists.
    # -v: the log names each test as it starts (pytest_compare.Resuming); --capture=sys:
    # what the runtime prints on fd 2 as it aborts the process reaches the log;
    # --continue-on-collection-errors: a module whose set-up fails (dpnp's test_copy.py
    # computes at import) counts as an error, and the others still run;
    # --timeout-method=thread: a test that hangs in a runtime's wait (where no signal
    # reaches Python) ends the process after its timeout, and the run goes on as
    # after a crash.
    pytest = [python, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-rfEs", "--capture=sys",
              "--continue-on-collection-errors",
              "--timeout=%d" % args.timeout, "--timeout-method=thread",
              "-o", "junit_family=xunit1",
              "--rootdir=" + site]
    # PYTHONPATH: pytest_deselect_file.py, the plugin that leaves tests out.
    here = os.path.dirname(os.path.abspath(__file__))
    base = dict(os.environ, ONEAPI_DEVICE_SELECTOR="*:cpu", PYTHONDONTWRITEBYTECODE="1",
                PYTHONPATH=here + (os.pathsep + os.environ["PYTHONPATH"]
                                   if os.environ.get("PYTHONPATH") else ""))
    for var in ("SYCL_DEVICE_FILTER", "POCL_REMOTE0_PARAMETERS", "POCL_DEVICES"):
        base.pop(var, None)
    env_local = dict(base, OCL_ICD_VENDORS=os.path.abspath(args.vendors))
    env_remote = dict(base)

    # Ids in the log are relative to the working directory; from site-packages on, as
    # the rootdir makes them in the JUnit file.
    resuming = Resuming(suite, lambda path: norm(path[path.rfind("site-packages/") + 14:]
                                                 if "site-packages/" in path else path))
    parts = [c for t in targets for c in chunks(t)] if args.full else [targets]
    deadline = time.monotonic() + args.budget
    results, failures = {"local": {}, "remote": {}}, []
    for i, part in enumerate(parts):
        part = part if isinstance(part, list) else [part]
        left = int(deadline - time.monotonic())
        if left <= 0:
            failures.append("the %d s budget ran out before %s" % (args.budget, part[0]))
            break
        if len(parts) > 1:
            suite.log("part %d of %d: %s" % (i + 1, len(parts), " ".join(
                p[p.rfind("site-packages/") + 14:] for p in part)))
        work = os.path.join(args.work, "part%03d" % i) if len(parts) > 1 else args.work
        os.makedirs(work, exist_ok=True)
        runs = {"local": (pytest + part, env_local),
                "remote": ([args.run_remote, args.state, args.build] + pytest + part,
                           env_remote)}
        res, fails = resuming.run(runs, deselect, left, work)
        for label in results:
            results[label].update(res[label])
        failures += fails
    for f in failures:
        suite.log("FAIL: " + f)
    # Compared even after such a failure: the tests it cost are counted and named.
    rc = suite.compare(results["local"], results["remote"], rows)
    return 1 if failures else rc


if __name__ == "__main__":
    sys.exit(main())
