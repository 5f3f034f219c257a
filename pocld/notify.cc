// notify.cc - sd_notify(3) over $NOTIFY_SOCKET, written here rather than
// linking libsystemd: the protocol is one datagram per state change, and the
// package then runs unchanged where systemd is absent.
#include "notify.hh"

#include "log.hh"

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace pocld {

namespace {

sockaddr_un g_addr;
socklen_t g_len = 0; // 0: no $NOTIFY_SOCKET
bool g_warned = false;

} // namespace

void notify_init()
{
  const char *e = getenv("NOTIFY_SOCKET");
  if (e == nullptr)
    return;
  std::string name = e;
  unsetenv("NOTIFY_SOCKET");
  g_addr = sockaddr_un{};
  g_addr.sun_family = AF_UNIX;
  // A path, or an abstract name ('@' for its leading zero byte); systemd's
  // other forms (vsock:) are not ours to serve.
  if ((name[0] != '/' && name[0] != '@') || name.size() < 2 ||
      name.size() > sizeof g_addr.sun_path) {
    LOG_WARN("-",
             "ignoring NOTIFY_SOCKET=%s: not a socket path or abstract "
             "name",
             name.c_str());
    return;
  }
  memcpy(g_addr.sun_path, name.data(), name.size());
  if (name[0] == '@')
    g_addr.sun_path[0] = '\0';
  // An abstract name is exactly its bytes, a path ends at its zero byte.
  g_len = socklen_t(offsetof(sockaddr_un, sun_path) + name.size() +
                    (name[0] == '/' ? 1 : 0));
  if (g_len > sizeof g_addr)
    g_len = sizeof g_addr;
}

bool notify(const char *state)
{
  if (g_len == 0)
    return true;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ssize_t n = -1;
  if (fd >= 0) {
    n = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr *>(&g_addr), g_len);
    int err = errno;
    close(fd);
    errno = err;
  }
  if (n == ssize_t(strlen(state)))
    return true;
  if (!g_warned)
    LOG_WARN("-", "cannot notify the service manager: %s", strerror(errno));
  g_warned = true;
  return false;
}

} // namespace pocld
