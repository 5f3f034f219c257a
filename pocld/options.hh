// options.hh - pocld's options: one table that both the command line and the
// configuration file go through (doc/pocld.md, "Configuration file").
#pragma once

#include <string>

namespace pocld {

// The options main acts on; the others set their globals (log_level,
// max_pending_commands, session_grace_ms, trace_prefix) directly.
struct Settings {
  std::string address = "127.0.0.1";
  long port = 0;      // set from POCL_REMOTE_DEFAULT_PORT
  long peer_port = 0; // 0: port + 2
  long max_sessions = 0;
  std::string psk_file, tls_cert, tls_key, tls_ca; // empty: none
  bool insecure = false;
  bool advertise = false;     // DNS-SD through avahi-daemon
  std::string advertise_name; // empty: "pocld on HOST"
};

enum class Parsed { Run, Done, Bad };

// The configuration file (--config F, else the default one where it
// exists), then the command line over it, into `s` and the globals.  Done
// after --help; Bad, said on stderr with the file and line or the option,
// for anything wrong.
Parsed parse_options(int argc, char **argv, Settings &s);

} // namespace pocld
