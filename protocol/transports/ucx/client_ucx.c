/* client_ucx.c - the client's UCX bulk transport (remote_transport.h,
   pocl_remote_bulk_ucx.c), which the application asks for with
   POCL_REMOTE_UCX=1: DATA, READ_DATA and COMPLETION payloads of
   POCL_REMOTE_UCX_MIN bytes or more move between this process's UCX
   worker and pocld's (shared memory when both sit on one host, RDMA over
   InfiniBand or RoCE, else TCP: UCX picks, UCX_TLS narrows), once both
   ends offered it in UCX_HELLO on the data link.  Until then, and for
   smaller payloads, the lanes or the link itself carry them.

   Opt-in because loading UCX changes the application's process: libucm
   patches glibc's memory functions unless UCX_MEM_EVENTS=no, which is set
   here unless the application set it (pocl_remote_ucx.c says why pocld
   does not link UCX either).  The first data link offers it; a payload
   that fails over UCX breaks the connection, and the resume sends it
   again inline.  A connection that resumed stays on TCP: the shutdown of
   the old links ended UCX for it (at both ends).  Part of the client
   driver's channel, not of the protocol library.  */

#include <stdlib.h>
#include <string.h>

#include "pocl_debug.h"
#include "pocl_runtime_config.h"
#include "remote_channel_private.h"

#ifdef POCL_REMOTE_HAVE_UCX

#include "pocl_remote_ucx.h"

int
pocl_remote_ucx_wanted (void)
{
  return pocl_get_bool_option ("POCL_REMOTE_UCX", 0);
}

static void
logged (const char *m)
{
  POCL_MSG_WARN ("remote: %s\n", m);
}

void
pocl_remote_ucx_setup (remote_server *s)
{
  /* UCX is loaded here, as the devices are set up one after another, not
     in the first offer's thread: loading sets variables in the environment
     (this one, read by libucm as it loads, and UCX_HANDLE_ERRORS), and a
     setenv that grows the environment frees the array a getenv in another
     thread may be reading: the next device's setup crashed there once in
     CI.  Once per process; a failure is logged and the offers fail.  */
  setenv ("UCX_MEM_EVENTS", "no", 0);
  pocl_remote_ucx_load (logged);
  if (pocl_remote_lanes_wanted ())
    {
      s->bulk.ops = &pocl_remote_lanes_bulk_ops;
      pocl_remote_lanes_setup (s);
    }
  else
    {
      s->bulk.ops = &pocl_remote_inline_bulk_ops;
      s->bulk.state = NULL;
    }
  pocl_remote_bulk inner = s->bulk;
  pocl_remote_ucx_bulk_init (&s->bulk, &s->ucx, inner);
}

/* This end's offer on the data link, in a thread of its own (starting
   UCX's worker takes milliseconds), counted among the readers:
   a resume waits for it before the bulk transport is closed.  Not logged:
   a resume does not send it again.  */
static void *
offer (void *p)
{
  remote_server *s = (remote_server *)p;
  pocl_remote_ucx_hello h;
  void *addr = NULL;
  size_t len = 0;
  if (pocl_remote_ucx_bulk_offer (&s->ucx, &h, &addr, &len) == 0)
    {
      pocl_remote_hdr hdr;
      memset (&hdr, 0, sizeof (hdr));
      hdr.type = POCL_RMSG_UCX_HELLO;
      hdr.body_size = sizeof (h);
      hdr.payload_size = len;
      struct iovec iov[3]
          = { { &hdr, sizeof (hdr) }, { &h, sizeof (h) }, { addr, len } };
      pthread_mutex_lock (&s->data_send_lock);
      if (!__atomic_load_n (&s->down, __ATOMIC_ACQUIRE)
          && !pocl_remote_dead (s))
        pocl_remote_link_send (&s->data, iov, 3);
      pthread_mutex_unlock (&s->data_send_lock);
      pocl_remote_ucx_bulk_free_address (&s->ucx, addr);
    }
  else if (!__atomic_load_n (&s->ucx.failed, __ATOMIC_ACQUIRE))
    POCL_MSG_WARN ("remote: POCL_REMOTE_UCX asks for UCX, which cannot start "
                   "here: payloads to %s:%u stay on TCP\n",
                   s->host, s->port);
  pocl_remote_reader_done (s);
  return NULL;
}

int
pocl_remote_ucx_reserve (remote_server *s)
{
  int lanes = pocl_remote_lanes_wanted () && pocl_remote_lanes_reserve (s);
  /* Not after a resume: UCX ended with the old links.  */
  s->ucx_offer = !__atomic_load_n (&s->ucx.failed, __ATOMIC_ACQUIRE);
  if (s->ucx_offer)
    pocl_remote_count_reader (s);
  return lanes || s->ucx_offer;
}

void
pocl_remote_ucx_start (remote_server *s)
{
  if (pocl_remote_lanes_wanted ())
    pocl_remote_lanes_start (s);
  if (s->ucx_offer)
    pocl_remote_spawn_reader (s, offer, s);
}

void
pocl_remote_ucx_answered (remote_server *s, const pocl_remote_ucx_hello *hello,
                          const void *addr, size_t len)
{
  if (!(hello->flags & POCL_REMOTE_UCX_OFFER))
    POCL_MSG_PRINT_INFO ("remote: %s:%u declines UCX: payloads stay on TCP\n",
                         s->host, s->port);
  else if (pocl_remote_ucx_bulk_accept (&s->ucx, hello, addr, len) == 0)
    POCL_MSG_PRINT_INFO ("remote: large payloads to %s:%u over UCX\n", s->host,
                         s->port);
  else
    POCL_MSG_WARN ("remote: no UCX endpoint to %s:%u: payloads stay on "
                   "TCP\n",
                   s->host, s->port);
}

#else

int
pocl_remote_ucx_wanted (void)
{
  if (pocl_get_bool_option ("POCL_REMOTE_UCX", 0))
    POCL_MSG_WARN ("remote: POCL_REMOTE_UCX: built without UCX\n");
  return 0;
}

void
pocl_remote_ucx_setup (remote_server *s)
{
}

int
pocl_remote_ucx_reserve (remote_server *s)
{
  return 0;
}

void
pocl_remote_ucx_start (remote_server *s)
{
}

void
pocl_remote_ucx_answered (remote_server *s, const pocl_remote_ucx_hello *hello,
                          const void *addr, size_t len)
{
}

#endif
