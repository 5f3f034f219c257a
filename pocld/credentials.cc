// credentials.cc - the pre-shared key and the TLS files, at startup and on
// SIGHUP.
#include "credentials.hh"

#include "control.hh"
#include "log.hh"
#include "pocl_remote_auth.h"
#include "server_tls.hh"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace pocld {

namespace {

// The key in `file` into `out`; false, logged, on a bad one.
bool read_key(const std::string &file, std::string &out)
{
  if (!pocl_remote_auth_available()) {
    LOG_ERR("-", "a pre-shared key needs OpenSSL, which this pocld was built "
                 "without");
    return false;
  }
  char key[POCL_REMOTE_MAX_KEY];
  int loose = 0;
  long n = pocl_remote_key_file(file.c_str(), key, &loose);
  if (n < 0) {
    LOG_ERR("-", "cannot read the key file %s: %s", file.c_str(),
            strerror(errno));
    return false;
  }
  if (loose)
    LOG_WARN("-", "key file %s can be read by other users", file.c_str());
  if (n == 0) {
    LOG_ERR("-", "the pre-shared key in %s must have %u to %u bytes",
            file.c_str(), POCL_REMOTE_MIN_KEY, POCL_REMOTE_MAX_KEY);
    return false;
  }
  out.assign(key, size_t(n));
  memset(key, 0, sizeof key);
  return true;
}

bool load_tls(const Settings &s)
{
  return tls_configure(s.tls_cert.c_str(), s.tls_key.c_str(),
                       s.tls_ca.empty() ? nullptr : s.tls_ca.c_str());
}

} // namespace

bool credentials_load(const Settings &s)
{
  const char *env = getenv("POCLD_PSK");
  if (!s.psk_file.empty()) {
    if (!read_key(s.psk_file, psk))
      return false;
  } else if (env != nullptr) {
    if (!pocl_remote_auth_available()) {
      LOG_ERR("-", "a pre-shared key needs OpenSSL, which this pocld was "
                   "built without");
      return false;
    }
    size_t n = pocl_remote_key_trim(env, strlen(env));
    if (n == 0) {
      LOG_ERR("-", "the pre-shared key must have %u to %u bytes",
              POCL_REMOTE_MIN_KEY, POCL_REMOTE_MAX_KEY);
      return false;
    }
    psk.assign(env, n);
    // Session processes need only pocld::psk.
    unsetenv("POCLD_PSK");
  }
  // Before anything is forked: session processes inherit the contexts.
  return s.tls_cert.empty() || load_tls(s);
}

bool credentials_reload(const Settings &s)
{
  if (s.psk_file.empty() && s.tls_cert.empty()) {
    LOG_INFO("-", "reload: no key or TLS files to read again%s",
             psk.empty() ? "" : " (the key from POCLD_PSK stays)");
    return true;
  }
  std::string key = psk;
  if (!s.psk_file.empty() && !read_key(s.psk_file, key)) {
    LOG_ERR("-", "reload failed: keeping the key and certificates in use");
    return false;
  }
  if (!s.tls_cert.empty() && !load_tls(s)) {
    LOG_ERR("-", "reload failed: keeping the key and certificates in use");
    return false;
  }
  psk.swap(key);
  std::string what = s.psk_file.empty() ? "" : "key file " + s.psk_file;
  if (!s.tls_cert.empty())
    what += (what.empty() ? "" : ", ") + std::string("certificate ") +
            s.tls_cert + " and key " + s.tls_key;
  LOG_INFO("-",
           "reloaded the %s: new sessions use them, open ones keep "
           "theirs",
           what.c_str());
  return true;
}

} // namespace pocld
