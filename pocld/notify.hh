// notify.hh - systemd's readiness protocol (sd_notify(3)), spoken by the
// listener: datagrams such as "READY=1" to the AF_UNIX socket that
// $NOTIFY_SOCKET names (a path, or an abstract name written with '@').
#pragma once

namespace pocld {

// Takes $NOTIFY_SOCKET and removes it from the environment, so that session
// processes and the libraries they load never speak for pocld.  Nothing
// happens without it.
void notify_init();
// Sends `state` (newline-separated VAR=value lines); false, logged once, if
// it could not be sent.  A no-op without $NOTIFY_SOCKET.
bool notify(const char *state);

} // namespace pocld
