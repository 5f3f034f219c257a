// child.hh - the processes the listener forks: one per session, and one
// that logs the devices at startup.
#pragma once

#include "devices.hh"

#include <sys/types.h>
#include <vector>

namespace pocld {

// Common set-up right after fork(): dies with the listener (PDEATHSIG), and
// default signal handling (SIGTERM ends the process at once).
void child_setup(pid_t listener);

// Serves the command-port connection `cmd_fd` as one session: reads and
// checks the HELLO, registers a fresh session id with the listener over
// `ctl`, discovers the devices, answers HELLO_REPLY, takes the data socket
// from the listener (kCtlAttach), runs the session, and exits once it ends.
// An exit never waits more than a bounded time for native commands.
// `hints`: what the startup discovery learnt about the platforms.
[[noreturn]] void run_session_process(int cmd_fd, int ctl, const char *peer,
                                      const std::vector<PlatformHint> &hints);

// Discovers the devices, logs them, writes "devices N" and the platform
// hints (format_hints) to `out`, exits.
[[noreturn]] void run_device_logger(int out);

} // namespace pocld
