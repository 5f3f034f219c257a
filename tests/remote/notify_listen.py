#!/usr/bin/env python3
"""notify_listen.py - the service manager's end of sd_notify(3) for tests.

  notify_listen.py SOCKET OUT POCLD_LOG

Binds an AF_UNIX datagram socket at SOCKET (a path, or an abstract name
written with '@', as $NOTIFY_SOCKET names them) and appends each datagram to
OUT as one line, its newlines shown as ' | ', followed by ' [listening]' when
pocld listened at that moment: POCLD_LOG has its "listening on A ports P"
line and P is a listening TCP port.  OUT is created once the socket is bound.
Runs until killed."""

import re
import socket
import sys


def listening(log):
    try:
        with open(log) as f:
            m = re.search(r"listening on \S+ ports (\d+) ", f.read())
    except OSError:
        return False
    if not m:
        return False
    port = ":%04X" % int(m.group(1))
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[1].endswith(port) and cols[3] == "0A":
                    return True
    return False


def main():
    name, out, log = sys.argv[1:4]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name[1:] if name.startswith("@") else name)
    open(out, "w").close()
    while True:
        msg = sock.recv(4096).decode(errors="replace").strip("\n")
        state = " [listening]" if listening(log) else ""
        with open(out, "a") as f:
            f.write(msg.replace("\n", " | ") + state + "\n")


if __name__ == "__main__":
    main()
