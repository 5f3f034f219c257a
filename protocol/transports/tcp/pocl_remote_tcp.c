/* pocl_remote_tcp.c - the TCP dial and socket options (pocl_remote_tcp.h).
   Part of the protocol library.  */

#include "pocl_remote_tcp.h"

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

/* Keepalive: the first probe after 5 s of silence, then one a second, the
   connection dead after 5 unanswered; unacknowledged data: 10 s.  */
#define KEEP_IDLE_S 5
#define KEEP_INTERVAL_S 1
#define KEEP_COUNT 5
#define USER_TIMEOUT_MS 10000u

void
pocl_remote_tcp_tune (int fd)
{
  int one = 1;
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  setsockopt (fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof (one));
  int idle = KEEP_IDLE_S, intvl = KEEP_INTERVAL_S, cnt = KEEP_COUNT;
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof (idle));
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof (intvl));
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof (cnt));
  unsigned user_timeout_ms = USER_TIMEOUT_MS;
  setsockopt (fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
              sizeof (user_timeout_ms));
}

int
pocl_remote_tcp_dial (const char *host, uint16_t port, int timeout_ms)
{
  struct addrinfo hints, *res = NULL, *ai;
  char portstr[8];
  memset (&hints, 0, sizeof (hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  snprintf (portstr, sizeof (portstr), "%u", (unsigned)port);
  if (getaddrinfo (host, portstr, &hints, &res) != 0)
    return -2;

  int fd = -1;
  for (ai = res; ai != NULL; ai = ai->ai_next)
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
          pocl_remote_tcp_tune (fd);
          break;
        }
      close (fd);
      fd = -1;
    }
  freeaddrinfo (res);
  return fd;
}
