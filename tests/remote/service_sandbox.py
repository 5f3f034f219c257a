#!/usr/bin/python3
"""service_sandbox.py - run a systemd unit's ExecStart= under its [Service]
hardening without systemd as PID 1 (tests/remote/test_package.sh).

  service_sandbox.py --unit FILE --root DIR --user USER[:GROUP] --map FROM=TO...
                     [--keep PATH]...

Emulates each option of the unit's [Service] section the way systemd applies
it: mounts in a mount namespace of its own (ProtectSystem=, PrivateTmp=, ...),
setpriv(1) for the user, capabilities and no_new_privs, and seccomp filters
made with libseccomp (python3-seccomp) for the system call options, with
SystemCallFilter='s groups expanded by systemd-analyze itself.  An option it
does not know fails the run: a new one in the unit needs its emulation here.

Paths: ExecStart='s absolute arguments that exist under --root are taken from
there; --map FROM=TO runs the unit's FROM (CacheDirectory=, Environment=) at
TO.  --user replaces User=/Group= (the unit's user does not exist here; root
means uid 0 with no capabilities).  --keep PATH: a directory that must stay
visible (the build tree the served device comes from): an option that would
hide it (ProtectHome=, PrivateTmp=) is then skipped with a note on stderr.
The command is exec'd in the end, so the pid this script started with is the
service's main pid.  Python 3.11 has no os.unshare: unshare(1) makes the
namespaces, and this script runs three times (stages)."""

import argparse
import errno
import json
import os
import shlex
import shutil
import subprocess
import sys

# Keys that are not hardening, and what this script does with them.
PLAIN = {"Type", "ExecStart", "ExecReload", "Restart", "RestartPreventExitStatus", "KillMode",
         "TimeoutStopSec", "User", "Group", "Environment", "CacheDirectory"}
HIDDEN_HOME = ["/home", "/root", "/run/user"]
HIDDEN_TMP = ["/tmp", "/var/tmp"]


def note(msg):
    print("service_sandbox: " + msg, file=sys.stderr, flush=True)


def read_service(path):
    """The [Service] section as (key, value) pairs, in order."""
    out, section = [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line
            elif section == "[Service]":
                key, _, value = line.partition("=")
                out.append((key.strip(), value.strip()))
    return out


def mapped(path, maps):
    for src, dst in maps:
        if path == src or path.startswith(src + "/"):
            return dst + path[len(src):]
    return path


def under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def mount(*args):
    subprocess.run(["mount", *args], check=True)


def mount_points():
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f]


def stage_mounts(opts, plan):
    """In the new mount namespace (stage 2): the file system options."""
    keep = plan["keep"]
    points = mount_points()
    hide = []
    for key, value in opts:
        if key == "ProtectSystem" and value == "strict":
            # Everything read-only but the API file systems.
            for p in points:
                if not any(under(p, api) for api in ("/proc", "/sys", "/dev")):
                    mount("-o", "remount,bind,ro", p)
        elif key == "ProtectHome" and value == "yes":
            hide += HIDDEN_HOME
        elif key == "PrivateTmp" and value == "yes":
            for d in HIDDEN_TMP:
                if any(under(k, d) for k in keep):
                    note("PrivateTmp: %s kept, it holds %s" % (d, keep))
                else:
                    mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", d)
        elif key in ("ProtectKernelTunables", "ProtectControlGroups") and value == "yes":
            ro = "/sys/fs/cgroup" if key == "ProtectControlGroups" else "/sys"
            for p in points:
                if under(p, ro):
                    mount("-o", "remount,bind,ro", p)
            if key == "ProtectKernelTunables":
                mount("--bind", "/proc/sys", "/proc/sys")
                mount("-o", "remount,bind,ro", "/proc/sys")
        elif key == "ProtectKernelLogs" and value == "yes":
            for p in ("/proc/kmsg", "/dev/kmsg"):
                if os.path.exists(p):
                    mount("--bind", "/dev/null", p)
    for d in hide:
        if not os.path.isdir(d):
            continue
        if any(under(k, d) for k in keep):
            note("ProtectHome: %s kept, it holds %s" % (d, keep))
        else:
            mount("-t", "tmpfs", "-o", "mode=000", "tmpfs", d)
    # CacheDirectory=: the one writable place.
    for d in plan["writable"]:
        mount("--bind", d, d)
        mount("-o", "remount,bind,rw", d)


def syscall_group(name, seen):
    """A SystemCallFilter= group, expanded with systemd-analyze."""
    if name in seen:
        return set()
    seen.add(name)
    text = subprocess.run(["systemd-analyze", "syscall-filter", name], check=True,
                          capture_output=True, text=True).stdout
    calls = set()
    for line in text.splitlines()[1:]:
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        calls |= syscall_group(word, seen) if word.startswith("@") else {word}
    return calls


def stage_seccomp(opts, plan):
    """As the service's user (stage 3): filters, umask, exec."""
    import seccomp as sc

    values = dict(opts)
    filters = []
    # SystemCallArchitectures=native: libseccomp's filters take the native
    # architecture only and kill on any other (its default bad-arch action).
    if values.get("SystemCallArchitectures") not in (None, "native"):
        sys.exit("service_sandbox: SystemCallArchitectures=%s not emulated"
                 % values["SystemCallArchitectures"])
    deny = sc.SyscallFilter(sc.ALLOW)
    filters.append(deny)
    if "SystemCallFilter" in values:
        err = getattr(errno, values.get("SystemCallErrorNumber", "EPERM"))
        f = sc.SyscallFilter(sc.ERRNO(err))
        for name in plan["syscalls"]:
            try:
                f.add_rule(sc.ALLOW, name)
            except (RuntimeError, ValueError):
                pass  # not a system call of this architecture
        # Last: loading a filter is no system service's call.
        filters.append(f)
    for key, value in opts:
        if key == "RestrictAddressFamilies":
            ok = {getattr(__import__("socket"), n) for n in value.split()}
            for fam in range(0, max(ok) + 1):
                if fam not in ok:
                    deny.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket",
                                  sc.Arg(0, sc.EQ, fam))
            deny.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket",
                          sc.Arg(0, sc.GT, max(ok)))
        elif key == "RestrictNamespaces" and value == "yes":
            deny.add_rule(sc.ERRNO(errno.EPERM), "unshare")
            deny.add_rule(sc.ERRNO(errno.EPERM), "setns")
            deny.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
            for flag in (0x00020000, 0x02000000, 0x04000000, 0x08000000,
                         0x10000000, 0x20000000, 0x40000000):
                deny.add_rule(sc.ERRNO(errno.EPERM), "clone",
                              sc.Arg(0, sc.MASKED_EQ, flag, flag))
        elif key == "LockPersonality" and value == "yes":
            deny.add_rule(sc.ERRNO(errno.EPERM), "personality",
                          sc.Arg(0, sc.NE, 0))
        elif key == "RestrictRealtime" and value == "yes":
            for policy in (1, 2, 6):  # SCHED_FIFO, SCHED_RR, SCHED_DEADLINE
                deny.add_rule(sc.ERRNO(errno.EPERM), "sched_setscheduler",
                              sc.Arg(1, sc.MASKED_EQ, 0xbfffffff, policy))
            deny.add_rule(sc.ERRNO(errno.EPERM), "sched_setattr")
        elif key == "RestrictSUIDSGID" and value == "yes":
            for bit in (0o4000, 0o2000):
                for call, arg in (("chmod", 1), ("fchmod", 1), ("fchmodat", 2),
                                  ("mkdir", 1), ("mkdirat", 2), ("mknod", 1),
                                  ("mknodat", 2), ("creat", 1)):
                    deny.add_rule(sc.ERRNO(errno.EPERM), call,
                                  sc.Arg(arg, sc.MASKED_EQ, bit, bit))
                for call, flags in (("open", 1), ("openat", 2)):
                    deny.add_rule(sc.ERRNO(errno.EPERM), call,
                                  sc.Arg(flags, sc.MASKED_EQ, os.O_CREAT, os.O_CREAT),
                                  sc.Arg(flags + 1, sc.MASKED_EQ, bit, bit))
        elif key == "ProtectKernelModules" and value == "yes":
            for call in ("init_module", "finit_module", "delete_module"):
                deny.add_rule(sc.ERRNO(errno.EPERM), call)
        elif key == "ProtectKernelLogs" and value == "yes":
            deny.add_rule(sc.ERRNO(errno.EPERM), "syslog")
        elif key == "ProtectHostname" and value == "yes":
            for call in ("sethostname", "setdomainname"):
                deny.add_rule(sc.ERRNO(errno.EPERM), call)
    if "UMask" in values:
        os.umask(int(values["UMask"], 8))
    for f in filters:
        f.load()
    os.execve(plan["argv"][0], plan["argv"], plan["env"])


# How each hardening option is applied: stage 2 (mounts), setpriv (user,
# privileges) or stage 3 (seccomp, umask).
EMULATED = {
    "ProtectSystem": {"strict"}, "ProtectHome": {"yes"}, "PrivateTmp": {"yes"},
    "ProtectKernelTunables": {"yes"}, "ProtectControlGroups": {"yes"},
    "ProtectKernelLogs": {"yes"}, "ProtectKernelModules": {"yes"},
    "ProtectHostname": {"yes"}, "NoNewPrivileges": {"yes"},
    "CapabilityBoundingSet": {""}, "AmbientCapabilities": {""},
    "RestrictNamespaces": {"yes"}, "RestrictRealtime": {"yes"},
    "RestrictSUIDSGID": {"yes"}, "LockPersonality": {"yes"},
    "SystemCallArchitectures": {"native"}, "UMask": None,
    "RestrictAddressFamilies": None, "SystemCallFilter": None,
    "SystemCallErrorNumber": None,
}


def plan_from(args):
    opts = read_service(args.unit)
    for key, value in opts:
        if key in PLAIN:
            continue
        want = EMULATED.get(key, set())
        if want is not None and value not in want:
            sys.exit("service_sandbox: %s=%s is not emulated here" % (key, value))
    maps = [tuple(m.split("=", 1)) for m in args.map]
    env = dict(os.environ)
    writable = []
    for key, value in opts:
        if key == "Environment":
            for item in shlex.split(value):
                k, _, v = item.partition("=")
                env[k] = mapped(v, maps)
        elif key == "CacheDirectory":
            path = mapped("/var/cache/" + value, maps)
            writable.append(path)
            env["CACHE_DIRECTORY"] = path
    user, _, group = args.user.partition(":")
    for d in writable:
        # Owned by the service's user, as systemd makes it.
        os.makedirs(d, exist_ok=True)
        shutil.chown(d, user, group or user)
    syscalls = set()
    for key, value in opts:
        if key == "SystemCallFilter":
            for word in value.split():
                syscalls |= syscall_group(word, set()) if word.startswith("@") else {word}
    exec_start = [v for k, v in opts if k == "ExecStart"]
    if len(exec_start) != 1:
        sys.exit("service_sandbox: want one ExecStart=, not %d" % len(exec_start))
    argv = [os.path.join(args.root, a.lstrip("/"))
            if a.startswith("/") and os.path.exists(os.path.join(args.root, a.lstrip("/")))
            else a for a in shlex.split(exec_start[0])]
    return opts, {"argv": argv, "env": env, "writable": writable, "keep": args.keep,
                  "user": args.user, "syscalls": sorted(syscalls)}


def setpriv_argv(opts, plan, script, plan_file):
    values = dict(opts)
    cmd = ["setpriv"]
    user, _, group = plan["user"].partition(":")
    if user != "root":
        cmd += ["--reuid", user, "--regid", group or user, "--clear-groups"]
    if values.get("NoNewPrivileges") == "yes":
        cmd.append("--no-new-privs")
    if values.get("CapabilityBoundingSet", None) == "":
        cmd += ["--bounding-set", "-all"]
    if values.get("AmbientCapabilities", None) == "":
        cmd += ["--inh-caps", "-all", "--ambient-caps", "-all"]
    return cmd + ["--", sys.executable, script, "--stage", "3", "--plan", plan_file]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unit")
    ap.add_argument("--root", default="/")
    ap.add_argument("--user", default="root")
    ap.add_argument("--map", action="append", default=[])
    ap.add_argument("--keep", action="append", default=[])
    ap.add_argument("--stage", default="1")
    ap.add_argument("--plan")
    args = ap.parse_args()
    script = os.path.abspath(__file__)
    if args.stage == "1":
        opts, plan = plan_from(args)
        plan_file = plan["env"].get("CACHE_DIRECTORY", "/tmp") + ".plan.json"
        with open(plan_file, "w") as f:
            json.dump({"opts": opts, "plan": plan}, f)
        os.chmod(plan_file, 0o644)  # read by the service's user
        ns = ["unshare", "--mount", "--propagation", "private"]
        if dict(opts).get("ProtectHostname") == "yes":
            ns.append("--uts")
        os.execvp(ns[0], ns + ["--", sys.executable, script, "--stage", "2",
                               "--plan", plan_file])
    with open(args.plan) as f:
        saved = json.load(f)
    opts, plan = [tuple(o) for o in saved["opts"]], saved["plan"]
    if args.stage == "2":
        stage_mounts(opts, plan)
        cmd = setpriv_argv(opts, plan, script, args.plan)
        os.execvp(cmd[0], cmd)
    stage_seccomp(opts, plan)


if __name__ == "__main__":
    main()
