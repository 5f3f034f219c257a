/* remote_transport.c - the client's tables of transports
   (remote_transport.h).  A new transport is one folder,
   protocol/transports/<name>/, whose client_<name>.c has its functions,
   and one entry here.  */

#include "remote_transport.h"

#include <stddef.h>

/* Links: TLS when POCL_REMOTE_TLS asks for it, else plain TCP.  */
static const remote_transport transports[] = {
  { "tls", pocl_remote_tls_open, pocl_remote_tls_wanted },
  { "tcp", pocl_remote_tcp_open, NULL },
};

/* Payloads on the data link: UCX when POCL_REMOTE_UCX asks for it (over
   lanes or inline until both ends offered it), else lanes when
   POCL_REMOTE_LANES (or the CPU count) wants some, else inline.  */
static const remote_bulk_transport bulks[] = {
  { "ucx", &pocl_remote_inline_bulk_ops, pocl_remote_ucx_setup,
    pocl_remote_ucx_reserve, pocl_remote_ucx_start, pocl_remote_ucx_wanted },
  { "lanes", &pocl_remote_lanes_bulk_ops, pocl_remote_lanes_setup,
    pocl_remote_lanes_reserve, pocl_remote_lanes_start,
    pocl_remote_lanes_wanted },
  { "inline", &pocl_remote_inline_bulk_ops, NULL, NULL, NULL, NULL },
};

const remote_transport *
pocl_remote_transport_pick (void)
{
  const remote_transport *t = transports;
  while (t->wanted != NULL && !t->wanted ())
    ++t;
  return t;
}

const remote_bulk_transport *
pocl_remote_bulk_pick (void)
{
  const remote_bulk_transport *t = bulks;
  while (t->wanted != NULL && !t->wanted ())
    ++t;
  return t;
}
