#!/usr/bin/env python3
"""Cuts UCX's own TCP connections between two pocld on demand, for
remote/multi_server_ucx_cut (test_multi_server.sh): listens on a Unix
socket and answers the fault proxy's "cut lanes" command
(tests/remote/test_multi_server.c) by destroying, with `ss -K`, every
established TCP connection of the given processes (pocld's session
processes) whose ports are none of the pocld ports given: what UCX_TLS=tcp
opened between the two UCX workers.  The payload in flight over UCX fails
mid-way; the rest must come over the peer link.

    ucx_cut.py CONTROL_SOCKET LISTENER_PID[,...] PORT[,...]
"""
import os
import re
import socket
import subprocess
import sys


def children(pids):
    out = []
    for p in pids:
        r = subprocess.run(["pgrep", "-P", p], capture_output=True, text=True)
        out += r.stdout.split()
    return out


def cut(listeners, ports):
    sessions = set(children(listeners))
    ss = subprocess.run(["ss", "-tnpH", "state", "established"],
                        capture_output=True, text=True).stdout
    n = 0
    for line in ss.splitlines():
        f = line.split()
        if len(f) < 5:
            continue
        local, peer, procs = f[2], f[3], " ".join(f[4:])
        if not any("pid=%s," % p in procs for p in sessions):
            continue
        lport = int(local.rsplit(":", 1)[1])
        pport = int(peer.rsplit(":", 1)[1])
        if lport in ports or pport in ports:
            continue
        src, dst = local.rsplit(":", 1)[0], peer.rsplit(":", 1)[0]
        r = subprocess.run(["ss", "-K", "src", src, "sport", "=", str(lport),
                            "dst", dst, "dport", "=", str(pport)],
                           capture_output=True, text=True)
        n += r.returncode == 0
    return n


def main():
    path, pids, ports = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    ports = {int(p) for p in ports.split(",")}
    try:
        os.unlink(path)
    except OSError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(4)
    while True:
        c, _ = s.accept()
        req = c.recv(64).decode(errors="replace")
        if re.match(r"cut lanes", req):
            n = cut(pids, ports)
            c.sendall(("cut %d UCX connections\n" % n).encode())
            print("ucx_cut: cut %d UCX connections" % n, flush=True)
        else:
            c.sendall(b"unknown command\n")
        c.close()


if __name__ == "__main__":
    main()
