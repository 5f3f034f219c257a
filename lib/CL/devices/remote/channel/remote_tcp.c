/* remote_tcp.c - the client's TCP transport (remote_transport.h): one
   tuned TCP socket per link (protocol/transports/tcp/pocl_remote_link_tcp.c).  The TLS
   transport (remote_tls.c) connects with pocl_remote_tcp_connect too.  */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "remote_transport.h"

static void
set_socket_options (int fd)
{
  int one = 1;
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  /* A silently dead server or link surfaces as an error in bounded time
     instead of a hang.  */
  setsockopt (fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof (one));
  int idle = 5, intvl = 1, cnt = 5;
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof (idle));
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof (intvl));
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof (cnt));
  unsigned user_timeout_ms = 10000;
  setsockopt (fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
              sizeof (user_timeout_ms));
}

int
pocl_remote_tcp_connect (const char *host, uint16_t port, int timeout_ms)
{
  struct addrinfo hints, *res = NULL, *ai;
  char portstr[8];
  memset (&hints, 0, sizeof (hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  snprintf (portstr, sizeof (portstr), "%u", (unsigned)port);
  if (getaddrinfo (host, portstr, &hints, &res) != 0)
    {
      POCL_MSG_ERR ("remote: cannot resolve %s\n", host);
      return -1;
    }

  int fd = -1;
  for (ai = res; ai; ai = ai->ai_next)
    {
      fd = socket (ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                   ai->ai_protocol);
      if (fd < 0)
        continue;
      int flags = fcntl (fd, F_GETFL);
      fcntl (fd, F_SETFL, flags | O_NONBLOCK);
      int r = connect (fd, ai->ai_addr, ai->ai_addrlen);
      if (r < 0 && errno == EINPROGRESS)
        {
          struct pollfd pfd = { fd, POLLOUT, 0 };
          int err = 0;
          socklen_t len = sizeof (err);
          if (poll (&pfd, 1, timeout_ms) == 1
              && getsockopt (fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0
              && err == 0)
            r = 0;
        }
      if (r == 0)
        {
          fcntl (fd, F_SETFL, flags);
          set_socket_options (fd);
          break;
        }
      close (fd);
      fd = -1;
    }
  freeaddrinfo (res);
  return fd;
}

int
pocl_remote_tcp_open (pocl_remote_link *l, const char *host, uint16_t port,
                      uint32_t role, const uint8_t *session_id, int timeout_ms)
{
  (void)role;
  (void)session_id;
  int fd = pocl_remote_tcp_connect (host, port, timeout_ms);
  if (fd < 0)
    {
      pocl_remote_link_clear (l);
      return -1;
    }
  pocl_remote_tcp_link (l, fd);
  return 0;
}
