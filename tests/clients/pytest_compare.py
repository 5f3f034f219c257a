"""Two pytest runs of one suite, local and through remote, compared test by test.

Shared by run_pyopencl.py and run_sycl.py. Each run goes in its own process group and
working directory and writes a JUnit file; the verdict: a test that passes locally but
not through remote fails the comparison unless the exceptions file (doc/clients.md) has
a row for it, under the suite's heading, with a reason; so does a run that crashed or
passed nothing. A listed test that passes on both gets a note (remove its row). A row
may name a test with its parameters, a whole test function or a whole file; rows with
`deselect` in their third column are left out of both runs.
Suite.start and Suite.wait run each suite once (run_pyopencl.py); Resuming runs it
on after a crash or a hang, without the test that it died in (run_sycl.py).
"""

import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET


class Suite:
    """One suite's names: NAME for the log lines, the local device's name for the
    verdict, and NORM, which takes the device out of a test id (ids must be equal
    on both runs)."""

    def __init__(self, name, local_name, norm=lambda tid: tid):
        self.name, self.local_name, self.norm = name, local_name, norm
        self._groups = []
        signal.signal(signal.SIGTERM, self._kill_all)
        signal.signal(signal.SIGINT, self._kill_all)

    def log(self, msg):
        print("%s: %s" % (self.name, msg), flush=True)

    def _kill_all(self, signum, _frame):
        """Stopped by ctest (timeout): take both pytest runs down with us."""
        for pgid in self._groups:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
        sys.exit(128 + signum)

    def junit_id(self, classname, name):
        """JUnit (classname, name) -> 'dir/test_x.py::[TestClass::]test_f[params]', normalized."""
        parts = classname.split(".")
        # The module is the last part named test_*; test classes (Test*) follow it.
        mods = [i for i, p in enumerate(parts) if p.startswith("test_")]
        m = mods[-1] if mods else len(parts) - 1
        path = "/".join(parts[: m + 1]) + ".py" if len(parts) > 1 else parts[0]
        return self.norm("::".join([path] + parts[m + 1:] + [name]))

    def read_junit(self, path):
        """{test id: (outcome, message)}, outcome in passed/failed/error/skipped/xfailed."""
        results = {}
        for case in ET.parse(path).getroot().iter("testcase"):
            tid = self.junit_id(case.get("classname", ""), case.get("name", ""))
            outcome, msg = "passed", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed" if child.tag == "failure" else "error"
                    msg = child.get("message", "")
                    break
                if child.tag == "skipped":
                    xfail = child.get("type") == "pytest.xfail"
                    outcome, msg = ("xfailed" if xfail else "skipped"), child.get("message", "")
            results[tid] = (outcome, msg.splitlines()[0][:160] if msg else "")
        return results

    def start(self, label, argv, env, work):
        """Start one pytest run in a directory of its own (some tests write to the cwd)."""
        cwd = os.path.join(work, label)
        os.makedirs(cwd, exist_ok=True)
        out = open(os.path.join(work, label + ".log"), "w")
        shown = [a for a in argv if a != "--deselect" and "::" not in a]
        self.log("+ [%s] %s (%d deselected)" % (label, " ".join(shown), argv.count("--deselect")))
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self._groups.append(proc.pid)
        return proc, out

    def wait(self, runs, budget, work):
        """Wait for RUNS {label: (proc, out, junit)} within BUDGET seconds in all:
        ({label: results}, [failures])."""
        deadline = time.monotonic() + budget
        failures, results = [], {}
        for label, (proc, out, junit) in runs.items():
            try:
                rc = proc.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = "killed after the %d s budget" % budget
                # The log's last line says where the run was.
                self.log("%s run killed after the %d s budget in: %s"
                         % (label, budget, last_line(os.path.join(work, label + ".log"))))
            out.close()
            if not os.path.exists(junit):
                failures.append("%s run left no JUnit file (exit %s); see %s.log"
                                % (label, rc, os.path.join(work, label)))
                continue
            results[label] = self.read_junit(junit)
            self.log("%s: %s (pytest exit %s)" % (label, summary(results[label]), rc))
        return results, failures

    def compare(self, loc, rem, rows):
        """The verdict on two runs' results: 0 or 1, with the reasons logged."""
        failures = []
        passed_local = {t for t, (o, _) in loc.items() if o == "passed"}
        passed_remote = {t for t, (o, _) in rem.items() if o == "passed"}
        explained = 0
        for t in sorted(passed_local - passed_remote):
            outcome, msg = rem.get(t, ("not run", ""))
            row = listed(t, rows)
            if row:
                explained += 1
                self.log("differs as documented: %s: %s through remote (%s)" % (t, outcome, row[0]))
            else:
                failures.append("%s passes on %s, %s through remote%s"
                                % (t, self.local_name, outcome, ": " + msg if msg else ""))
        for t in sorted(passed_remote - passed_local):
            self.log("note: %s passes through remote but is %s on %s"
                     % (t, loc.get(t, ("not run",))[0], self.local_name))
        for t, (_, dsel) in sorted(rows.items()):
            if dsel:
                self.log("deselected in both runs: %s (doc/clients.md says why)" % t)
            elif [x for x in passed_local & passed_remote if listed(x, {t: 1})]:
                self.log("note: listed but passes on both: %s (remove its row)" % t)
        # At most 30 named: a run where nothing works would print thousands.
        for f in failures[:30]:
            self.log("FAIL: " + f)
        if len(failures) > 30:
            self.log("FAIL: ... and %d more" % (len(failures) - 30))
        if failures:
            self.log("FAIL: %d tests pass on %s and not through remote, undocumented"
                     % (len(failures), self.local_name))
        if not passed_remote:
            self.log("FAIL: no test passed through remote")
        if failures or not passed_remote:
            return 1
        self.log("PASS: %d passed through remote, %d on %s; %d pass on %s only, all "
                 "documented" % (len(passed_remote), len(passed_local), self.local_name,
                                 explained, self.local_name))
        return 0


# A result line of pytest -v: "<path>::<test> OUTCOME [ nn%]"; a test that is running
# when its process dies leaves its id alone on the last line.
_V_LINE = re.compile(r"^(\S+\.py::.+?)(?: (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?: |$)|$)")
_CRASH_LINE = re.compile(r"Fatal Python error|terminate called|  what\(\)|Segmentation fault"
                         r"|\+ Timeout \+")
_V_OUTCOME = {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "error",
              "SKIPPED": "skipped", "XFAIL": "xfailed"}


def _node_id(text):
    """The test id at the start of TEXT: what the runtime printed as it died may follow
    it on the same line, and parameters in brackets may hold spaces."""
    depth, i = 0, text.find("::")
    for j in range(i, len(text)):
        if text[j] == "[":
            depth += 1
        elif text[j] == "]":
            depth -= 1
            if depth == 0:
                return text[: j + 1]
        elif text[j] == " " and depth == 0:
            return text[:j]
    return text


class Resuming:
    """Runs that go on after a crash: with -v, the log of a pytest run that died (no
    JUnit file) tells the tests done and the one that was running; that one counts as
    "crashed" and the run starts again without them (pytest_deselect_file.py), up to
    MAX_CRASHES times. A crash before the first test ends the run.
    LOG_ID maps a test path of the log (relative to the working directory) to an id."""

    MAX_CRASHES = 30

    def __init__(self, suite, log_id):
        self.suite, self.log_id = suite, log_id

    def run(self, runs, deselect, budget, work):
        """RUNS {label: (argv, env)} at once, each with the ids of DESELECT left out:
        ({label: results}, [failures])."""
        deadline = time.monotonic() + budget
        state = {}
        for label, (argv, env) in runs.items():
            state[label] = {"argv": argv, "env": env, "done": {}, "attempt": 0,
                            "skipfile": os.path.join(work, label + ".deselect")}
            self._start(label, state[label], deselect, work)
        failures = []
        while any(st.get("proc") for st in state.values()):
            for label, st in state.items():
                proc = st.get("proc")
                if not proc:
                    continue
                try:
                    rc = proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    if time.monotonic() < deadline:
                        continue
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    rc = None
                st["out"].close()
                st["proc"] = None
                junit, log = st["junit"], st["log"]
                if rc is None:
                    failures.append("%s run killed after the %d s budget in: %s"
                                    % (label, budget, last_line(log)))
                    st["done"].update(self._read_log(log)[0])
                elif os.path.exists(junit):
                    st["done"].update(self.suite.read_junit(junit))
                    self.suite.log("%s: pytest exit %s after %d crashes"
                                   % (label, rc, st["attempt"] - 1))
                else:
                    done, running = self._read_log(log)
                    st["done"].update(done)
                    if running is None:
                        failures.append("%s run died (exit %s) before its first test: %s (%s)"
                                        % (label, rc, self._crash_reason(log), log))
                    elif st["attempt"] > self.MAX_CRASHES:
                        failures.append("%s run crashed more than %d times; last in %s"
                                        % (label, self.MAX_CRASHES, running))
                    else:
                        why = self._crash_reason(log)
                        self.suite.log("%s: crashed (exit %s) in %s: %s; going on without it"
                                       % (label, rc, running, why))
                        st["done"][running] = ("crashed", "exit %s: %s" % (rc, why))
                        self._start(label, st, deselect, work)
        results = {label: st["done"] for label, st in state.items()}
        for label, res in results.items():
            self.suite.log("%s: %s" % (label, summary(res)))
        return results, failures

    def _start(self, label, st, deselect, work):
        st["attempt"] += 1
        name = label if st["attempt"] == 1 else "%s.%d" % (label, st["attempt"])
        st["junit"] = os.path.join(work, name + ".xml")
        st["log"] = os.path.join(work, name + ".log")
        if os.path.exists(st["junit"]):
            os.remove(st["junit"])
        with open(st["skipfile"], "w") as f:
            f.writelines(t + "\n" for t in sorted(set(deselect) | set(st["done"])))
        env = dict(st["env"], PYTEST_DESELECT_FILE=st["skipfile"])
        argv = st["argv"] + ["-p", "pytest_deselect_file", "--junitxml=" + st["junit"]]
        st["proc"], st["out"] = self.suite.start(name, argv, env, work)

    def _read_log(self, log):
        """({id: (outcome, "")} of the tests done, the id of the one running or None)."""
        done, running = {}, None
        with open(log, errors="replace") as f:
            for line in f:
                m = _V_LINE.match(line.strip())
                if not m:
                    continue
                tid = self.log_id(_node_id(m.group(1)))
                if m.group(2):
                    done[tid] = (_V_OUTCOME[m.group(2)], "")
                    running = None
                else:
                    running = tid
        return done, running

    @staticmethod
    def _crash_reason(log):
        """What the runtime said as the process died (the runs capture sys.stdout and
        sys.stderr only, so what C++ and CPython print on fd 2 reaches the log)."""
        with open(log, errors="replace") as f:
            said = [l[m.start():].strip(" +\n") for l in f for m in [_CRASH_LINE.search(l)] if m]
        said = list(dict.fromkeys(said))  # pytest-timeout says "Timeout" twice
        return " ".join(said[-2:])[:200] if said else last_line(log)


def last_line(log):
    """The log's last line (its end, at most 200 characters)."""
    with open(log, errors="replace") as f:
        return ((f.read().strip().splitlines() or [""])[-1])[-200:]


def read_rows(path, section, prefixes):
    """Rows '| `id` | reason | [deselect] |' of the table under heading SECTION whose id
    starts with one of PREFIXES: {id: (reason, deselect)}."""
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
            if not tid.startswith(prefixes) or len(cells) < 2 or not cells[1]:
                continue
            rows[tid] = (cells[1], len(cells) > 2 and cells[2].strip("` ") == "deselect")
    return rows


def listed(tid, rows):
    """The row naming this test, its whole function or its file, or None."""
    return rows.get(tid) or rows.get(tid.split("[")[0]) or rows.get(tid.split("::")[0])


def summary(res):
    counts = {}
    for outcome, _ in res.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    text = ", ".join("%d %s" % (counts.get(k, 0), k)
                     for k in ("passed", "failed", "error", "skipped", "xfailed"))
    return text + (", %d crashed" % counts["crashed"] if "crashed" in counts else "")
