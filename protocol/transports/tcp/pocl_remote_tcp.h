/* pocl_remote_tcp.h - the one TCP dial of PoCL-R and the options of its
   sockets, for every link: the client's command and data links and lanes,
   pocld's peer links and peer lanes.  */

#ifndef POCL_REMOTE_TCP_H
#define POCL_REMOTE_TCP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the options every PoCL-R TCP socket has: no Nagle delay (messages
   are small and answered), and keepalive probes and a user timeout, so
   that a peer or a path that goes silent surfaces as an error on the
   socket within about 10 s instead of the kernel's default of hours.  */
void pocl_remote_tcp_tune (int fd);

/* A connected, blocking, tuned socket to host:port, within timeout_ms per
   address tried: the descriptor, -1 when no address accepted, -2 when the
   host does not resolve.  */
int pocl_remote_tcp_dial (const char *host, uint16_t port, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
