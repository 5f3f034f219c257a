/* remote_conn.c - the rest of the message I/O with pocld: synchronous
   requests and their replies, the driver's handlers, the loss of a session
   (whose commands fail through those handlers), and the count of a
   session's readers.

   Sending, and the in-flight command table: remote_send.c; one reader
   thread per link receives (remote_reader.c).  Connecting:
   remote_session.c; the servers: remote_registry.c.  */

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "pocl_remote_workers.h"
#include "pocl_runtime_config.h"
#include "remote_channel_private.h"

remote_channel_handlers pocl_remote_handlers;

void
pocl_remote_channel_setup (const remote_channel_handlers *h)
{
  pocl_remote_handlers = *h;
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

uint64_t
pocl_remote_server_to_client_time (remote_server *s, uint64_t ts)
{
  return ts ? (uint64_t)((int64_t)ts - s->clock_offset_ns) : 0;
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
          remote_inflight *re = pocl_remote_event_pop (s, b);
          if (re == NULL)
            break;
          pocl_remote_handlers.complete (s, re, &c);
          pocl_remote_handlers.after_message ();
        }
    }
}
