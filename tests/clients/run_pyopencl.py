#!/usr/bin/env python3
"""clients/pyopencl: pyopencl's own test suite through the remote device.

Two pytest runs of the suite (the sdist's test/ directory, set up by setup_clients.sh),
one after the other, each in its own process group:
  local:  POCL_DEVICES=pthread, this build's libpocl (OCL_ICD_VENDORS),
  remote: through run_remote.sh, i.e. POCL_DEVICES=remote against the fixture's pocld,
which serves that same pthread device. pyopencl's tests take every device of every
platform (its ctx_factory fixture), so each run sees exactly one device.

Verdict (pytest_compare.py), from the two JUnit files, against the table "pyopencl:
tests that differ" of doc/clients.md. Test ids are shown without the device parameter
(e.g. test/test_array.py::test_sum[float32]).
Exit status 77 (CTest SKIP_RETURN_CODE) if pyopencl is not installed.
"""

import argparse
import os
import re
import subprocess
import sys
import time

from pytest_compare import Suite, listed, read_rows

# pyopencl's device parameter: "<context factory for <pyopencl.Device '...' on '...'>>"
CTX_PARAM = re.compile(r"<context factory for <pyopencl\.Device .*? on .*?>>-?")


def norm_nodeid(nodeid):
    """A test id without the device: test/test_x.py::test_f[params]."""
    nodeid = CTX_PARAM.sub("", nodeid).replace("[]", "")
    return nodeid[:-2] + "]" if nodeid.endswith("-]") else nodeid


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
    ap.add_argument("--budget", type=int, default=1500, help="both runs, seconds")
    args = ap.parse_args()

    suite = Suite("clients/pyopencl", "pthread", norm_nodeid)
    python = os.path.join(args.venv, "bin", "python")
    if not os.access(python, os.X_OK) or not os.path.isdir(os.path.join(args.tests, "test")):
        suite.log("SKIP: pyopencl is not installed in %s (tools/setup.sh runs "
                  "tests/clients/setup_clients.sh, which needs PyPI)" % args.venv)
        return 77
    os.makedirs(args.work, exist_ok=True)
    rows = read_rows(args.exceptions, "pyopencl: tests that differ", ("test/",))
    deselect = {t: 1 for t, (_, d) in rows.items() if d}

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
    # The remote run starts after the local one has ended, so that its builds find
    # every kernel there: at once, both compiled many of them side by side (690 CPU
    # seconds against 535 for the whole test, run alone on two cores).
    pocl_cache = os.path.join(os.environ.get("XDG_CACHE_HOME")
                              or os.path.join(os.path.expanduser("~"), ".cache"),
                              "pocl", "kcache")
    env_local = dict(base, POCL_DEVICES="pthread", POCL_CACHE_DIR=pocl_cache,
                     XDG_CACHE_HOME=os.path.join(args.work, "cache-local"))
    env_local.pop("POCL_REMOTE0_PARAMETERS", None)
    env_remote = dict(base, XDG_CACHE_HOME=os.path.join(args.work, "cache-remote"))

    results, failures = {}, []
    end = time.monotonic() + args.budget
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
                if "::" in nodeid and listed(norm_nodeid(nodeid), deselect):
                    argv += ["--deselect", nodeid]
        proc, out = suite.start(label, argv + [testdir], env, args.work)
        done, failed = suite.wait({label: (proc, out, junit)},
                                  max(1, int(end - time.monotonic())), args.work)
        results.update(done)
        failures += failed
    if failures:
        for f in failures:
            suite.log("FAIL: " + f)
        return 1
    return suite.compare(results["local"], results["remote"], rows)


if __name__ == "__main__":
    sys.exit(main())
