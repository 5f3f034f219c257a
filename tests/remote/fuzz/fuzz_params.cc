// fuzz_params.cc - libFuzzer target for the client's parsing of
// POCL_REMOTE<n>_PARAMETERS (lib/CL/devices/remote/remote_params.c).
//
// The input is what a user could type into the variable (up to its first
// NUL).  The parser must either refuse it with a reason or return an
// address that holds together: a host without blanks that fits its buffer,
// ports from 1 to 65533, a device index below POCL_REMOTE_MAX_DEVICES; and
// that address, written back in the variable's syntax, must parse to itself.
extern "C" {
#include "remote_params.h"
}
#include "pocl_remote_protocol.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void check_host(const char *host, uint16_t port)
{
  size_t n = strnlen(host, POCL_REMOTE_HOST_MAX);
  if (n == 0 || n >= POCL_REMOTE_HOST_MAX || strchr(host, ' ') != nullptr ||
      port == 0 || port > 65533)
    abort();
}

std::string format(const char *host, uint16_t port)
{
  std::string h(host);
  if (h.find(':') != std::string::npos)
    h = "[" + h + "]";
  return h + ":" + std::to_string(port);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  std::string text(reinterpret_cast<const char *>(data), size);
  text = text.c_str(); // the environment holds no NUL
  pocl_remote_params p;
  const char *why = pocl_remote_parse_parameters(text.c_str(), &p);
  if (why != nullptr) {
    if (why[0] == 0)
      abort();
    return 0;
  }
  check_host(p.host, p.port);
  if (p.device >= POCL_REMOTE_MAX_DEVICES)
    abort();
  std::string again = format(p.host, p.port) + "/" + std::to_string(p.device);
  if (p.peer_host[0] != 0) {
    check_host(p.peer_host, p.peer_port);
    again += "#" + format(p.peer_host, p.peer_port);
  }
  pocl_remote_params q;
  if (pocl_remote_parse_parameters(again.c_str(), &q) != nullptr ||
      strcmp(p.host, q.host) != 0 || p.port != q.port ||
      p.device != q.device || strcmp(p.peer_host, q.peer_host) != 0 ||
      p.peer_port != q.peer_port) {
    fprintf(stderr, "'%s' -> '%s' does not parse back\n", text.c_str(),
            again.c_str());
    abort();
  }
  return 0;
}
