/* client_lanes.c - the client's lanes (remote_transport.h,
   pocl_remote_lanes.h): more links beside the data link that carry the
   payloads of large DATA, READ_DATA and COMPLETION messages in stripes
   (pocl_remote_bulk_lanes.c).  Here: how many, and opening them.  Part of
   the client driver's channel, not of the protocol library.  */

#include <string.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "pocl_remote_auth.h"
#include "pocl_remote_cpus.h"
#include "pocl_runtime_config.h"
#include "remote_channel_private.h"

/* Lanes a connection opens (POCL_REMOTE_LANES): one per this many CPUs, up
   to POCL_REMOTE_MAX_LANES.  Each stream takes about a core at either end
   while it moves; over loopback on the H200 host (32 CPUs: 7 lanes), four
   streams moved about 10 GB/s, eight 15.  */
#define REMOTE_CPUS_PER_LANE 4

static unsigned
lanes_wanted (void)
{
  long cpus = pocl_remote_usable_cpus ();
  long n = pocl_get_int_option ("POCL_REMOTE_LANES",
                                (int)(cpus / REMOTE_CPUS_PER_LANE));
  return n < 0                             ? 0
         : n > (long)POCL_REMOTE_MAX_LANES ? POCL_REMOTE_MAX_LANES
                                           : (unsigned)n;
}

int
pocl_remote_lanes_wanted (void)
{
  return lanes_wanted () > 0;
}

void
pocl_remote_lanes_setup (remote_server *s)
{
  /* A striped payload may come right after a lane's HELLO_REPLY, before
     the opener has published the lane: its receive waits that long.  */
  pocl_remote_lanes_init (&s->lanes, 0, 10000);
  s->bulk.state = &s->lanes;
}

/* Connects lane 1, 2, ... in turn, each published as soon as its
   HELLO_REPLY came: pocld may stripe over it from then on.  In a thread of
   its own, counted among the readers (a resume waits for it): a far server
   takes round trips per lane, which connecting should not wait for.  */
static void *
open_lanes (void *p)
{
  remote_server *s = (remote_server *)p;
  unsigned want = lanes_wanted (), k;
  long timeout_ms
      = pocl_get_int_option ("POCL_REMOTE_CONNECT_TIMEOUT_MS", 5000);
  uint16_t port = (uint16_t)(s->port + POCL_REMOTE_DATA_PORT_OFFSET);
  char key[POCL_REMOTE_MAX_KEY];
  long key_len = pocl_remote_client_key (key);
  pocl_remote_link *l = &s->lanes.opening;
  for (k = 1; k <= want && key_len >= 0; ++k)
    {
      pocl_remote_hello_reply rep;
      uint64_t t0, t1;
      if (__atomic_load_n (&s->down, __ATOMIC_ACQUIRE) || pocl_remote_dead (s))
        break;
      if (s->transport->open (l, s->host, port, POCL_REMOTE_ROLE_LANE,
                              s->session_id, (int)timeout_ms))
        break;
      if (pocl_remote_handshake (s, l, POCL_REMOTE_ROLE_LANE, k, s->session_id,
                                 NULL, key, (size_t)key_len, &rep, &t0, &t1)
              != CL_SUCCESS
          || pocl_remote_lanes_attach (&s->lanes, k, l))
        {
          pocl_remote_link_close (l);
          break;
        }
      pocl_remote_link_clear (l);
    }
  memset (key, 0, sizeof (key));
  if (k <= want)
    POCL_MSG_WARN ("remote: %u of %u lanes to %s:%u\n", k - 1, want, s->host,
                   s->port);
  pocl_remote_reader_done (s);
  return NULL;
}

int
pocl_remote_lanes_reserve (remote_server *s)
{
  pocl_remote_count_reader (s);
  return 1;
}

void
pocl_remote_lanes_start (remote_server *s)
{
  pocl_remote_spawn_reader (s, open_lanes, s);
}
