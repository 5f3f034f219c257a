// credentials.hh - the pre-shared key and the TLS files: loaded by the
// listener at startup, and again on SIGHUP (doc/pocld.md, "Reloading").
// Session processes keep what they were forked with.
#pragma once

#include "options.hh"

namespace pocld {

// The key from --psk-file (else POCLD_PSK) into pocld::psk, and the TLS
// files; false, logged, if any is bad.
bool credentials_load(const Settings &s);
// The same files again, for the sessions forked from now on: used only
// when every one of them loads; otherwise the old ones stay, and the log
// says why.  False then.
bool credentials_reload(const Settings &s);

} // namespace pocld
