/* remote_session.c - sessions with pocld: connecting (the handshake is
   remote_handshake.c's), one session per host:port (in the registry,
   remote_registry.c), peer links between them, a fresh session for a device
   whose session died, and the goodbye at exit.  */

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "pocl_remote_auth.h"
#include "pocl_runtime_config.h"
#include "pocl_timing.h"
#include "remote_channel_private.h"
#include "remote_trace.h"

/* Whether a CONNECT_PEER of a to b succeeded.  */
static void
peer_linked (remote_server *a, remote_server *b, cl_int status)
{
  pocl_remote_registry_lock ();
  if (status == CL_SUCCESS)
    {
      __atomic_fetch_or (&a->peers, (uint64_t)1 << b->index, __ATOMIC_RELEASE);
      __atomic_fetch_or (&b->peers, (uint64_t)1 << a->index, __ATOMIC_RELEASE);
    }
  /* a failed pair may be tried again by the next context */
  a->linking &= ~((uint64_t)1 << b->index);
  pocl_remote_registry_unlock ();
  if (status == CL_SUCCESS)
    POCL_MSG_PRINT_INFO ("remote: %s:%u and %s:%u are peers\n", a->host,
                         a->port, b->host, b->port);
  else
    POCL_MSG_WARN ("remote: %s:%u cannot reach its peer %s:%u (%d); "
                   "their commands synchronise through this client\n",
                   a->host, a->port, b->peer_host, b->peer_port, status);
}

/* The reply to a CONNECT_PEER, on a's reader thread.  */
static void
peer_answered (remote_server *a, remote_request *req, cl_int status)
{
  peer_linked (a, req->link, status);
}

/* Clock samples per server for the trace; the one of the shortest round
   trip is kept.  */
#define TRACE_CLOCK_SAMPLES 8

/* When tracing, measures the server's clock offset with a few CLOCK
   requests and notes the server in the trace's metadata.  */
static void
trace_server (remote_server *s)
{
  if (!pocl_remote_trace_on || s->index >= POCL_REMOTE_MAX_PEERS)
    return;
  int64_t offset_ns = 0;
  uint64_t rtt_ns = UINT64_MAX;
  for (int i = 0; i < TRACE_CLOCK_SAMPLES; ++i)
    {
      pocl_remote_clock c;
      void *reply = NULL;
      uint64_t reply_size = 0;
      c.monotonic_ns = pocl_remote_trace_now ();
      cl_int err = pocl_remote_request (s, POCL_RMSG_CLOCK, &c, sizeof (c),
                                        NULL, 0, &reply, &reply_size);
      uint64_t t1 = pocl_remote_trace_now ();
      if (err == CL_SUCCESS && reply_size == sizeof (pocl_remote_clock)
          && t1 - c.monotonic_ns < rtt_ns)
        {
          pocl_remote_clock sc;
          memcpy (&sc, reply, sizeof (sc));
          rtt_ns = t1 - c.monotonic_ns;
          offset_ns = (int64_t)sc.monotonic_ns
                      - (int64_t)(c.monotonic_ns + rtt_ns / 2);
        }
      free (reply);
    }
  if (rtt_ns == UINT64_MAX)
    {
      POCL_MSG_WARN ("remote: %s:%u measured no clock offset for the trace\n",
                     s->host, s->port);
      rtt_ns = 0;
    }
  pocl_remote_trace_server (s, offset_ns, rtt_ns);
}

static cl_int
server_connect (remote_server *s)
{
  long timeout_ms
      = pocl_get_int_option ("POCL_REMOTE_CONNECT_TIMEOUT_MS", 5000);
  pocl_remote_hello_reply rep;
  uint64_t t0, t1, u0, u1;
  cl_int err;
  char key[POCL_REMOTE_MAX_KEY];
  long key_len = pocl_remote_client_key (key);
  if (key_len < 0)
    return CL_DEVICE_NOT_AVAILABLE;

  s->transport = pocl_remote_transport_pick ();
  if (s->transport->open (&s->cmd, s->host, s->port, POCL_REMOTE_ROLE_COMMAND,
                          NULL, (int)timeout_ms))
    return CL_DEVICE_NOT_AVAILABLE;
  err = pocl_remote_handshake (s, &s->cmd, POCL_REMOTE_ROLE_COMMAND, 0, NULL,
                               NULL, key, (size_t)key_len, &rep, &t0, &t1);
  if (err != CL_SUCCESS)
    return err;
  memcpy (s->session_id, rep.session_id, 16);
  s->num_devices = rep.num_devices;
  s->session_grace_ms = rep.session_grace_ms;
  s->clock_offset_ns = (int64_t)rep.server_time_ns - (int64_t)((t0 + t1) / 2);

  if (s->transport->open (&s->data, s->host,
                          (uint16_t)(s->port + POCL_REMOTE_DATA_PORT_OFFSET),
                          POCL_REMOTE_ROLE_DATA, s->session_id,
                          (int)timeout_ms))
    return CL_DEVICE_NOT_AVAILABLE;
  err = pocl_remote_handshake (s, &s->data, POCL_REMOTE_ROLE_DATA, 0,
                               s->session_id, NULL, key, (size_t)key_len, &rep,
                               &u0, &u1);
  memset (key, 0, sizeof (key));
  if (err != CL_SUCCESS)
    return err;

  s->pid = getpid ();
  int bulk = pocl_remote_bulk_reserve (s);
  if (pocl_remote_start_readers (s))
    {
      if (bulk)
        pocl_remote_reader_done (s);
      return CL_OUT_OF_HOST_MEMORY;
    }
  if (bulk)
    s->bulk_transport->start (s);
  trace_server (s);
  POCL_MSG_PRINT_INFO ("remote: connected to %s:%u, %u devices\n", s->host,
                       s->port, s->num_devices);
  return CL_SUCCESS;
}

/* A server record, its session not yet connected.  */
static remote_server *
server_new (const char *host, uint16_t port, const char *peer_host,
            uint16_t peer_port, uint32_t index)
{
  remote_server *s = calloc (1, sizeof (remote_server));
  if (s == NULL)
    return NULL;
  s->host = strdup (host);
  s->peer_host = strdup (peer_host);
  if (s->host == NULL || s->peer_host == NULL)
    {
      free (s->host);
      free (s->peer_host);
      free (s);
      return NULL;
    }
  s->port = port;
  s->index = index;
  s->peer_port = peer_port;
  pocl_remote_link_clear (&s->cmd);
  pocl_remote_link_clear (&s->data);
  s->bulk_transport = pocl_remote_bulk_pick ();
  s->bulk.ops = s->bulk_transport->ops;
  s->bulk.state = NULL;
  if (s->bulk_transport->setup != NULL)
    s->bulk_transport->setup (s);
  pthread_mutex_init (&s->cmd_send_lock, NULL);
  pthread_mutex_init (&s->data_send_lock, NULL);
  pthread_mutex_init (&s->data_order_lock, NULL);
  pthread_mutex_init (&s->table_lock, NULL);
  pthread_cond_init (&s->reply_cond, NULL);
  return s;
}

/* Finds or opens the connection to host:port.  peer_host/peer_port: where
   its peers reach it (NULL: host, port + 2).  */
remote_server *
pocl_remote_server_get (const char *host, uint16_t port, const char *peer_host,
                        uint16_t peer_port, cl_int *err)
{
  static uint32_t next_index = 0;
  remote_server *s;
  pocl_remote_registry_lock ();
  s = pocl_remote_registry_find (host, port);
  if (s)
    {
      pocl_remote_registry_unlock ();
      *err = pocl_remote_dead (s) ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
      return s;
    }

  s = server_new (host, port, peer_host ? peer_host : host,
                  peer_host ? peer_port
                            : (uint16_t)(port + POCL_REMOTE_PEER_PORT_OFFSET),
                  next_index++);
  if (s == NULL)
    {
      pocl_remote_registry_unlock ();
      *err = CL_OUT_OF_HOST_MEMORY;
      return NULL;
    }

  *err = server_connect (s);
  if (*err != CL_SUCCESS)
    {
      POCL_MSG_ERR ("remote: cannot connect to pocld at %s:%u\n", host, port);
      __atomic_store_n (&s->dead, 1, __ATOMIC_RELEASE);
    }
  pocl_remote_registry_add (s);
  pocl_remote_registry_unlock ();
  return s;
}

/* The old record stays allocated, on the retired list (threads of its
   session may still hold it, and it never revives: its commands have all
   failed); the new one takes its place and index, which no peer is linked
   to any more.  */
remote_server *
pocl_remote_server_renew (remote_server *old, uint64_t epoch, cl_int *err)
{
  remote_server *s;
  pocl_remote_registry_lock ();
  if (!pocl_remote_registry_holds (old))
    {
      /* another thread renewed it already */
      pocl_remote_registry_unlock ();
      *err = CL_DEVICE_NOT_AVAILABLE;
      return NULL;
    }
  s = server_new (old->host, old->port, old->peer_host, old->peer_port,
                  old->index);
  if (s == NULL)
    {
      pocl_remote_registry_unlock ();
      *err = CL_OUT_OF_HOST_MEMORY;
      return NULL;
    }
  s->epoch = epoch;
  *err = server_connect (s);
  if (*err == CL_SUCCESS && s->num_devices < old->num_devices)
    {
      POCL_MSG_ERR ("remote: %s:%u now serves %u devices, %u before\n",
                    s->host, s->port, s->num_devices, old->num_devices);
      *err = CL_DEVICE_NOT_AVAILABLE;
    }
  if (*err != CL_SUCCESS)
    {
      /* The server ends a half-made session when its sockets close.  A
         session refused for its device count has readers that may still
         use the record, which therefore is not freed.  */
      __atomic_store_n (&s->leaving, 1, __ATOMIC_RELEASE);
      __atomic_store_n (&s->dead, 1, __ATOMIC_RELEASE);
      pocl_remote_shutdown_links (s);
      pocl_remote_registry_unlock ();
      return NULL;
    }
  uint64_t bit = (uint64_t)1 << old->index;
  remote_server *o;
  for (o = pocl_remote_registry_first (); o; o = o->next)
    if (o != old && old->index < 64)
      {
        __atomic_fetch_and (&o->peers, ~bit, __ATOMIC_RELEASE);
        o->linking &= ~bit;
      }
  pocl_remote_registry_replace (old, s);
  pocl_remote_registry_unlock ();
  POCL_MSG_WARN ("remote: a new session with %s:%u for contexts from id %"
                 PRIu64 " on\n",
                 s->host, s->port, epoch);
  return s;
}

/* Introduces a and b: a connects to b's session as its peer, so that
   completions and migrated buffers between them go server to server.
   Asynchronous: clCreateContext calls it holding PoCL's global context
   lock, which a reader thread may need before it can read the reply; until
   the reply, their commands synchronise through this client.  */
void
pocl_remote_peer_link (remote_server *a, remote_server *b)
{
  if (a == b || a->index >= POCL_REMOTE_MAX_PEERS
      || b->index >= POCL_REMOTE_MAX_PEERS || pocl_remote_dead (a)
      || pocl_remote_dead (b))
    return;
  pocl_remote_registry_lock ();
  uint64_t bit = (uint64_t)1 << b->index;
  int start = !(pocl_remote_linked (a, b) || pocl_remote_linked (b, a)
                || (a->linking & bit) || (b->linking & ((uint64_t)1 << a->index)));
  if (start)
    a->linking |= bit;
  pocl_remote_registry_unlock ();
  if (!start)
    return;
  remote_request *req = calloc (1, sizeof (remote_request));
  if (req == NULL)
    {
      peer_linked (a, b, CL_OUT_OF_HOST_MEMORY);
      return;
    }
  pocl_remote_connect_peer c;
  memset (&c, 0, sizeof (c));
  c.self_index = a->index;
  c.peer_index = b->index;
  c.port = b->peer_port;
  c.host_len = (uint32_t)strlen (b->peer_host);
  memcpy (c.session_id, b->session_id, 16);
  struct iovec host = { b->peer_host, c.host_len };
  req->type = POCL_RMSG_CONNECT_PEER;
  req->detached = 1;
  req->answered = peer_answered;
  req->link = b;
  pthread_mutex_lock (&a->table_lock);
  req->id = ++a->next_request_id;
  req->next = a->requests;
  a->requests = req;
  pthread_mutex_unlock (&a->table_lock);
  /* on failure the loss handler frees it with the other requests */
  pocl_remote_send (a, 0, POCL_RMSG_CONNECT_PEER, req->id, &c, sizeof (c),
                    &host, 1);
}

/* An application that exits tells its servers, which end its sessions at
   once instead of keeping them for a reconnect.  Only the process that
   connected says it: a forked child exiting must not end its parent's
   sessions.  */
static void __attribute__ ((destructor))
pocl_remote_say_goodbye (void)
{
  remote_server *s;
  if (pocl_remote_registry_trylock ())
    return;
  for (s = pocl_remote_registry_first (); s; s = s->next)
    if (s->pid == getpid () && !pocl_remote_dead (s)
        && !__atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
      {
        /* the server closes now: no reconnect thread while we exit */
        __atomic_store_n (&s->leaving, 1, __ATOMIC_RELEASE);
        pocl_remote_send (s, 0, POCL_RMSG_BYE, 0, NULL, 0, NULL, 0);
      }
  pocl_remote_registry_unlock ();
}

