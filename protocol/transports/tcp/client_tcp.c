/* client_tcp.c - the client's TCP transport (remote_transport.h): one
   socket per link from the protocol's one dial (pocl_remote_tcp.h), as a
   TCP link (pocl_remote_link_tcp.c).  The TLS transport (client_tls.c)
   connects with pocl_remote_tcp_connect too.  Part of the client driver's
   channel, not of the protocol library.  */

#include <stdio.h>

#include "pocl_debug.h"
#include "pocl_remote_tcp.h"
#include "remote_transport.h"

int
pocl_remote_tcp_connect (const char *host, uint16_t port, int timeout_ms)
{
  int fd = pocl_remote_tcp_dial (host, port, timeout_ms);
  if (fd == -2)
    POCL_MSG_ERR ("remote: cannot resolve %s\n", host);
  return fd < 0 ? -1 : fd;
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
