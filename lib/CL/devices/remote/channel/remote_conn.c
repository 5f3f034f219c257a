/* remote_conn.c - message I/O on the connections to pocld: sends (each
   message whole under its socket's lock, logged for a resume), synchronous
   requests and their replies, the in-flight command table, and the loss of
   a session (whose commands fail through the driver's handlers), and the
   count of a session's readers.

   Threads: application threads write their own messages (no hand-off on the
   command path); one reader thread per socket receives (remote_reader.c).
   Connecting: remote_session.c; the servers: remote_registry.c.  */

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "pocl_remote_workers.h"
#include "pocl_runtime_config.h"
#include "remote_channel_private.h"
#include "remote_trace.h"

remote_channel_handlers pocl_remote_handlers;

void
pocl_remote_channel_setup (const remote_channel_handlers *h)
{
  pocl_remote_handlers = *h;
}

/* The trace's send events: commands, their DATA, and the notifications
   and subscriptions of events (which name the event in their body).  */
static void
trace_send (remote_server *s, uint32_t type, uint64_t id, const void *body,
            uint64_t bytes, uint64_t t0)
{
  remote_trace_what what = REMOTE_TRACE_SEND;
  if (type < POCL_RMSG_NOTIFY_EVENT || type > POCL_RMSG_DATA)
    return;
  if (type == POCL_RMSG_DATA)
    what = REMOTE_TRACE_SEND_DATA;
  else if (type == POCL_RMSG_NOTIFY_EVENT || type == POCL_RMSG_SUBSCRIBE)
    {
      what = REMOTE_TRACE_NOTIFY;
      memcpy (&id, body, sizeof (id));
    }
  pocl_remote_trace_record (what, s->index, id, type, bytes, t0,
                            pocl_remote_trace_now ());
}

int
pocl_remote_send_ref (remote_server *s, int data_socket, uint32_t type,
                      uint64_t id, const void *body, size_t body_size,
                      const struct iovec *payload, int payload_count,
                      int stable_from)
{
  struct iovec iov[8];
  pocl_remote_hdr h;
  int i, n = 0, stable = 8;
  uint64_t total = 0;

  assert (payload_count <= 6);
  for (i = 0; i < payload_count; ++i)
    total += payload[i].iov_len;
  h.type = type;
  h.body_size = (uint32_t)body_size;
  h.payload_size = total;
  h.id = id;
  iov[n].iov_base = &h;
  iov[n++].iov_len = sizeof (h);
  if (body_size)
    {
      iov[n].iov_base = (void *)body;
      iov[n++].iov_len = body_size;
    }
  for (i = 0; i < payload_count; ++i)
    {
      if (i == stable_from)
        stable = n;
      if (payload[i].iov_len)
        iov[n++] = payload[i];
    }

  pthread_mutex_t *lock = data_socket ? &s->data_send_lock : &s->cmd_send_lock;
  remote_log *log = &s->log[data_socket];
  if (pocl_remote_dead (s))
    return -1;
  uint64_t trace_t0 = REMOTE_TRACE_T0 ();
  int held = 0;
  pthread_mutex_lock (lock);
  pocl_remote_log_trim (log, __atomic_load_n (&s->acked[data_socket],
                                              __ATOMIC_ACQUIRE));
  int r = pocl_remote_log_append (log, iov, n, stable);
  /* A large payload in one piece may go another way (the bulk transport,
     which marks the header); the log keeps the plain type: sent again, it
     comes inline.  */
  uint32_t mark = data_socket && total >= POCL_REMOTE_STRIPE_MIN
                          && iov[n - 1].iov_len == total
                      ? s->bulk.ops->mark (&s->bulk, total)
                      : 0;
  /* A failed write is the reader's to notice: the message is logged, and
     the reconnect sends it again.  */
  if (r == 0 && !__atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
    {
      pocl_remote_link *l = data_socket ? &s->data : &s->cmd;
      if (!data_socket)
        held = pocl_remote_send_cmd (s, type, iov, n) == 1;
      else if (mark == 0)
        pocl_remote_link_send (l, iov, n);
      else
        {
          h.type |= mark;
          /* PARTIAL: the link is in step but pocld did not get the
             payload (UCX failed under it): the links break, and the
             resume sends it again inline.  */
          if (pocl_remote_link_send (l, iov, n - 1) == 0
              && s->bulk.ops->send (&s->bulk, l, mark, iov[n - 1].iov_base,
                                    total, NULL)
                     == POCL_REMOTE_BULK_PARTIAL)
            pocl_remote_shutdown_links (s);
        }
    }
  pthread_mutex_unlock (lock);
  __atomic_fetch_add (&s->bytes_sent, sizeof (h) + body_size + total,
                      __ATOMIC_RELAXED);
  if (__builtin_expect (pocl_remote_trace_on, 0) && !held)
    trace_send (s, type, id, body, sizeof (h) + body_size + total, trace_t0);
  return r;
}

int
pocl_remote_send (remote_server *s, int data_socket, uint32_t type,
                  uint64_t id, const void *body, size_t body_size,
                  const struct iovec *payload, int payload_count)
{
  return pocl_remote_send_ref (s, data_socket, type, id, body, body_size,
                               payload, payload_count, payload_count);
}

/* Sends a request and blocks until its REPLY.  *reply (malloc'd, may be
   NULL) receives the reply payload when the caller asks for it.  */
cl_int
pocl_remote_request (remote_server *s, uint32_t type, const void *body,
                     size_t body_size, const struct iovec *payload,
                     int payload_count, void **reply, uint64_t *reply_size)
{
  remote_request req;
  memset (&req, 0, sizeof (req));
  req.type = type;

  pthread_mutex_lock (&s->table_lock);
  if (pocl_remote_dead (s))
    {
      pthread_mutex_unlock (&s->table_lock);
      return CL_DEVICE_NOT_AVAILABLE;
    }
  req.id = ++s->next_request_id;
  req.next = s->requests;
  s->requests = &req;
  pthread_mutex_unlock (&s->table_lock);

  int send_failed = pocl_remote_send (s, 0, type, req.id, body, body_size,
                                      payload, payload_count);

  /* Builds of large programs take long; a dead link is caught sooner by the
     socket (keepalive, user timeout), this bounds a live but stuck server. */
  long timeout_s = pocl_get_int_option ("POCL_REMOTE_REQUEST_TIMEOUT", 600);
  struct timespec deadline;
  clock_gettime (CLOCK_REALTIME, &deadline);
  deadline.tv_sec += timeout_s;

  pthread_mutex_lock (&s->table_lock);
  while (!req.done && !pocl_remote_dead (s) && !send_failed)
    if (pthread_cond_timedwait (&s->reply_cond, &s->table_lock, &deadline)
        == ETIMEDOUT)
      break;
  if (!req.done)
    {
      remote_request **p = &s->requests;
      while (*p && *p != &req)
        p = &(*p)->next;
      if (*p)
        *p = req.next;
      req.status = CL_DEVICE_NOT_AVAILABLE;
      POCL_MSG_ERR ("remote: request type %u to %s:%u got no reply\n", type,
                    s->host, s->port);
    }
  pthread_mutex_unlock (&s->table_lock);

  if (reply)
    *reply = req.payload;
  else
    free (req.payload);
  if (reply_size)
    *reply_size = req.payload_size;
  return req.status;
}

/* Sends a request whose reply nobody waits for: the reader logs a failure.
   Used where the caller holds PoCL locks that a completion may need.  */
void
pocl_remote_request_async (remote_server *s, uint32_t type, const void *body,
                           size_t body_size, const struct iovec *payload,
                           int payload_count)
{
  remote_request *req = calloc (1, sizeof (remote_request));
  if (req == NULL)
    return;
  req->type = type;
  req->detached = 1;
  pthread_mutex_lock (&s->table_lock);
  req->id = ++s->next_request_id;
  req->next = s->requests;
  s->requests = req;
  pthread_mutex_unlock (&s->table_lock);
  /* on failure the loss handler frees it with the other requests */
  pocl_remote_send (s, 0, type, req->id, body, body_size, payload,
                    payload_count);
}

void
pocl_remote_event_insert (remote_server *s, remote_inflight *f)
{
  unsigned b = (unsigned)(f->id & (REMOTE_EVENT_BUCKETS - 1));
  pthread_mutex_lock (&s->table_lock);
  f->hash_next = s->events[b];
  s->events[b] = f;
  __atomic_fetch_add (&s->in_flight, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock (&s->table_lock);
}

remote_inflight *
pocl_remote_event_take (remote_server *s, uint64_t id)
{
  unsigned b = (unsigned)(id & (REMOTE_EVENT_BUCKETS - 1));
  pthread_mutex_lock (&s->table_lock);
  remote_inflight **p = &s->events[b];
  while (*p && (*p)->id != id)
    p = &(*p)->hash_next;
  remote_inflight *re = *p;
  if (re)
    {
      *p = re->hash_next;
      __atomic_fetch_sub (&s->in_flight, 1, __ATOMIC_RELAXED);
    }
  pthread_mutex_unlock (&s->table_lock);
  return re;
}

uint64_t
pocl_remote_server_to_client_time (remote_server *s, uint64_t ts)
{
  return ts ? (uint64_t)((int64_t)ts - s->clock_offset_ns) : 0;
}

void
pocl_remote_shutdown_links (remote_server *s)
{
  pocl_remote_link_shutdown (&s->cmd);
  pocl_remote_link_shutdown (&s->data);
  s->bulk.ops->shutdown (&s->bulk);
}

/* What the bulk transport sets up besides, counted in (1) or not (0).  */
int
pocl_remote_bulk_reserve (remote_server *s)
{
  return s->bulk_transport->reserve != NULL && s->bulk_transport->reserve (s);
}

/* The threads a resume waits for (remote_channel_private.h).  */
void
pocl_remote_reader_done (remote_server *s)
{
  pthread_mutex_lock (&s->table_lock);
  --s->readers;
  pthread_cond_broadcast (&s->reply_cond);
  pthread_mutex_unlock (&s->table_lock);
}

void
pocl_remote_count_reader (remote_server *s)
{
  pthread_mutex_lock (&s->table_lock);
  ++s->readers;
  pthread_mutex_unlock (&s->table_lock);
}

int
pocl_remote_spawn_reader (remote_server *s, void *(*fn) (void *), void *arg)
{
  /* Detached: a reader ends on its own when the connection does, and
     nobody waits for it (the application may exit at any time).  */
  int r = pocl_remote_thread_detached (fn, arg);
  if (r)
    pocl_remote_reader_done (s);
  return r;
}

/* The session is lost for good: called by a reader on a protocol error, or
   by the reconnect thread when it gives up.  */
void
pocl_remote_server_lost (remote_server *s)
{
  pthread_mutex_lock (&s->table_lock);
  int was_dead = __atomic_exchange_n (&s->dead, 1, __ATOMIC_ACQ_REL);
  remote_request *req = s->requests, *next;
  s->requests = NULL;
  for (; req; req = next)
    {
      next = req->next;
      if (req->detached)
        free (req);
      else
        {
          req->status = CL_DEVICE_NOT_AVAILABLE;
          req->done = 1;
        }
    }
  pthread_cond_broadcast (&s->reply_cond);
  pthread_mutex_unlock (&s->table_lock);
  if (was_dead)
    return;

  POCL_MSG_ERR ("remote: lost the connection to %s:%u\n", s->host, s->port);
  /* wake the other reader */
  pocl_remote_shutdown_links (s);

  pocl_remote_handlers.server_lost (s);

  unsigned b;
  pocl_remote_completion c;
  memset (&c, 0, sizeof (c));
  c.status = CL_DEVICE_NOT_AVAILABLE;
  for (b = 0; b < REMOTE_EVENT_BUCKETS; ++b)
    {
      for (;;)
        {
          pthread_mutex_lock (&s->table_lock);
          remote_inflight *re = s->events[b];
          if (re)
            {
              s->events[b] = re->hash_next;
              __atomic_fetch_sub (&s->in_flight, 1, __ATOMIC_RELAXED);
            }
          pthread_mutex_unlock (&s->table_lock);
          if (re == NULL)
            break;
          pocl_remote_handlers.complete (s, re, &c);
          pocl_remote_handlers.after_message ();
        }
    }
}
