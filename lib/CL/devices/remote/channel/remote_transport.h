/* remote_transport.h - the client's transports (doc/protocol.md,
   "Transports"): how its links come to be (the link transports: TCP, TLS)
   and how large payloads move on its data link (the bulk transports:
   UCX, lanes, inline).  The rest of the channel sees only the links and
   the bulk ops (protocol/transports/pocl_remote_link.h, pocl_remote_bulk.h).  */

#ifndef POCL_REMOTE_TRANSPORT_H
#define POCL_REMOTE_TRANSPORT_H

#include "pocl_remote_bulk.h"
#include "pocl_remote_link.h"

struct remote_server;

typedef struct remote_transport
{
  const char *name;
  /* Connects l to host:port and does the transport's own setup, up to where
     HELLO can go out.  `role` (POCL_REMOTE_ROLE_*) and `session_id` (NULL
     on a new session's command link) are what the connection is for, for a
     transport that announces it (TLS's STARTTLS).  l may be shut down by
     another thread meanwhile.  0, or -1 (logged) with l cleared.  */
  int (*open) (pocl_remote_link *l, const char *host, uint16_t port,
               uint32_t role, const uint8_t *session_id, int timeout_ms);
  /* Whether the application's configuration asks for it (NULL: the
     fallback, always).  */
  int (*wanted) (void);
} remote_transport;

typedef struct remote_bulk_transport
{
  const char *name;
  const pocl_remote_bulk_ops *ops;
  /* Sets s->bulk.state up when the server's record is made (NULL:
     nothing).  */
  void (*setup) (struct remote_server *s);
  /* Once the data link is up (a new session, a resume): what the transport
     sets up besides, in the background, counted among the readers (a
     resume waits for it).  reserve counts it in (1; 0: nothing to do),
     start starts it.  */
  int (*reserve) (struct remote_server *s);
  void (*start) (struct remote_server *s);
  int (*wanted) (void);
} remote_bulk_transport;

/* The tables, in order of preference (remote_transport.c): the first entry
   that is wanted is taken.  */
const remote_transport *pocl_remote_transport_pick (void);
const remote_bulk_transport *pocl_remote_bulk_pick (void);

/* The entries' functions: each transport's client side, in its folder
   (protocol/transports/<name>/client_<name>.c).  */
int pocl_remote_tcp_open (pocl_remote_link *l, const char *host, uint16_t port,
                          uint32_t role, const uint8_t *session_id,
                          int timeout_ms);
int pocl_remote_tls_open (pocl_remote_link *l, const char *host, uint16_t port,
                          uint32_t role, const uint8_t *session_id,
                          int timeout_ms);
int pocl_remote_tls_wanted (void);
int pocl_remote_lanes_wanted (void);
void pocl_remote_lanes_setup (struct remote_server *s);
int pocl_remote_lanes_reserve (struct remote_server *s);
void pocl_remote_lanes_start (struct remote_server *s);
int pocl_remote_ucx_wanted (void);
void pocl_remote_ucx_setup (struct remote_server *s);
int pocl_remote_ucx_reserve (struct remote_server *s);
void pocl_remote_ucx_start (struct remote_server *s);

/* A connected, tuned TCP socket to host:port (blocking), or -1 (logged):
   what the socket based transports open first (client_tcp.c).  */
int pocl_remote_tcp_connect (const char *host, uint16_t port, int timeout_ms);

#endif
