/* remote_reader.c - the reader threads, one per socket of a connection to
   pocld: they wake the requests their replies answer, land read data where
   the in-flight command says, hand completions up to the driver
   (remote_channel_handlers), print kernel output, and acknowledge what
   they received.  */

#include <string.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "remote_channel_private.h"
#include "remote_trace.h"

/* A reader thread's receive buffer: one recv usually brings in a whole
   message, or several.  Large payloads bypass it and land in place.  */
#define RBUF_SIZE (64 << 10)
typedef struct rbuf
{
  pocl_remote_link *link;
  /* how long a receive polls before it blocks: on the command link
     pocl_remote_spin_ns, the next completion being often less than that
     away (the application's next command, a migration) */
  uint64_t spin_ns;
  int io_failed; /* the link broke (not the server's messages) */
  uint32_t mark; /* how the current message's payload comes (bulk) */
  size_t start, end;
  char data[RBUF_SIZE];
} rbuf;

static int
rb_read (rbuf *rb, void *dst, uint64_t n)
{
  char *d = (char *)dst;
  for (;;)
    {
      size_t have = rb->end - rb->start;
      size_t take = n < have ? (size_t)n : have;
      memcpy (d, rb->data + rb->start, take);
      rb->start += take;
      d += take;
      n -= take;
      if (n == 0)
        return 0;
      if (n >= RBUF_SIZE / 2)
        return (rb->io_failed = pocl_remote_link_recv_full (rb->link, d, n));
      long r
          = pocl_remote_link_recv (rb->link, rb->data, RBUF_SIZE, rb->spin_ns);
      if (r <= 0)
        return (rb->io_failed = -1);
      rb->start = 0;
      rb->end = (size_t)r;
    }
}

static int
rb_read_cb (void *rb, void *dst, uint64_t n)
{
  return rb_read ((rbuf *)rb, dst, n);
}

/* The current message's payload (or n bytes of it), the way its mark
   says (a bulk transport).  */
static int
rb_payload (remote_server *s, rbuf *rb, void *dst, uint64_t n)
{
  if (rb->mark == 0)
    return rb_read (rb, dst, n);
  pocl_remote_bulk_io io = { rb_read_cb, rb, NULL, NULL, 0 };
  uint64_t arrived;
  int r = s->bulk.ops->recv (&s->bulk, rb->link, rb->mark, dst, n, &io,
                             &arrived);
  if (r == POCL_REMOTE_BULK_REFUSED)
    POCL_MSG_ERR ("remote: a payload marked %#x from %s:%u, which this "
                  "connection cannot take\n",
                  rb->mark, s->host, s->port);
  else if (r != POCL_REMOTE_BULK_OK)
    rb->io_failed = -1;
  return r == POCL_REMOTE_BULK_OK ? 0 : -1;
}

/* Reads and drops n bytes: a payload nobody wants.  */
static int
rb_skip (rbuf *rb, uint64_t n)
{
  char buf[4096];
  while (n > 0)
    {
      size_t chunk = n < sizeof (buf) ? (size_t)n : sizeof (buf);
      if (rb_read (rb, buf, chunk))
        return -1;
      n -= chunk;
    }
  return 0;
}

/* Drops the current message's payload, which may come another way than
   the link (its mark: lanes, UCX).  */
static int
rb_drop (remote_server *s, rbuf *rb, uint64_t n)
{
  return rb->mark ? rb_payload (s, rb, NULL, n) : rb_skip (rb, n);
}

static int
handle_reply (remote_server *s, rbuf *rb, const pocl_remote_hdr *h)
{
  pocl_remote_reply r;
  if (rb_read (rb, &r, sizeof (r)))
    return -1;
  if (h->payload_size > POCL_REMOTE_MAX_PAYLOAD)
    {
      POCL_MSG_ERR ("remote: reply payload of %" PRIu64 " bytes refused\n",
                    h->payload_size);
      return -1;
    }

  pthread_mutex_lock (&s->table_lock);
  remote_request **p = &s->requests;
  while (*p && (*p)->id != h->id)
    p = &(*p)->next;
  remote_request *req = *p;
  if (req)
    *p = req->next;
  pthread_mutex_unlock (&s->table_lock);

  if (req == NULL)
    {
      POCL_MSG_ERR ("remote: reply to unknown request %" PRIu64 "\n", h->id);
      return -1;
    }

  void *payload = NULL;
  int lost = 0;
  if (h->payload_size > 0 && !req->detached)
    {
      payload = malloc (h->payload_size);
      lost = payload == NULL || rb_read (rb, payload, h->payload_size);
    }
  else
    lost = rb_skip (rb, h->payload_size);
  if (lost)
    {
      /* cut inside the payload: the server sends the reply again after a
         resume, or the loss handler fails the request */
      free (payload);
      pthread_mutex_lock (&s->table_lock);
      req->next = s->requests;
      s->requests = req;
      if (pocl_remote_dead (s))
        {
          req->status = CL_DEVICE_NOT_AVAILABLE;
          req->done = 1;
          pthread_cond_broadcast (&s->reply_cond);
        }
      pthread_mutex_unlock (&s->table_lock);
      return -1;
    }

  if (req->detached)
    {
      if (req->answered)
        req->answered (s, req, r.status);
      else if (r.status != CL_SUCCESS)
        POCL_MSG_ERR ("remote: request type %u failed on %s:%u: %d\n",
                      req->type, s->host, s->port, r.status);
      free (req);
      return 0;
    }

  pthread_mutex_lock (&s->table_lock);
  req->status = r.status;
  req->payload = payload;
  req->payload_size = h->payload_size;
  req->done = 1;
  pthread_cond_broadcast (&s->reply_cond);
  pthread_mutex_unlock (&s->table_lock);
  return 0;
}

static void
unpack_rect (char *dst, const char *src, const remote_inflight *re)
{
  size_t z, y;
  for (z = 0; z < re->region[2]; ++z)
    for (y = 0; y < re->region[1]; ++y)
      memcpy (dst + z * re->slice_pitch + y * re->row_pitch,
              src + (z * re->region[1] + y) * re->region[0], re->region[0]);
}

/* A completion that breaks the protocol: the session is lost, and the
   event is out of the table, where the loss's sweep (perhaps already run
   by the other reader) would look for it; fail it here.  */
static int
fail_taken (remote_server *s, remote_inflight *re)
{
  pocl_remote_completion c;
  memset (&c, 0, sizeof (c));
  c.status = CL_DEVICE_NOT_AVAILABLE;
  pocl_remote_handlers.complete (s, re, &c);
  return -1;
}

/* A completion cut inside its payload: back into the table, for the
   server to send again after a resume.  Once the session is lost for good
   the sweep may have passed already: then fail it here.  */
static int
payload_lost (remote_server *s, remote_inflight *re)
{
  pocl_remote_event_insert (s, re);
  if (pocl_remote_dead (s) && pocl_remote_event_take (s, re->id) == re)
    return fail_taken (s, re);
  return -1;
}

/* Reads a message's body and takes its event out of the table; NULL (the
   session is lost) if the socket broke or the event is unknown.  */
static remote_inflight *
take_body (remote_server *s, rbuf *rb, const pocl_remote_hdr *h, void *body,
           size_t size, const char *what)
{
  if (rb_read (rb, body, size))
    return NULL;
  remote_inflight *re = pocl_remote_event_take (s, h->id);
  if (re == NULL)
    POCL_MSG_ERR ("remote: %s for unknown event %" PRIu64 "\n", what, h->id);
  return re;
}

static int
handle_completion (remote_server *s, rbuf *rb, const pocl_remote_hdr *h)
{
  uint64_t trace_t0 = REMOTE_TRACE_T0 ();
  pocl_remote_completion c;
  remote_inflight *re = take_body (s, rb, h, &c, sizeof (c), "completion");
  if (re == NULL)
    return -1;

  if (c.peer_bytes)
    __atomic_fetch_add (&s->peer_bytes, c.peer_bytes, __ATOMIC_RELAXED);
  if (h->payload_size > 0)
    {
      int bad = (re->dst == NULL || c.status != CL_COMPLETE
                 || re->received != 0
                 || (h->payload_size != re->dst_size
                     && !(re->partial && h->payload_size < re->dst_size
                          && !re->unpack)));
      if (bad)
        {
          POCL_MSG_ERR ("remote: completion of event %" PRIu64
                        " carries %" PRIu64 " unexpected bytes\n",
                        h->id, h->payload_size);
          return fail_taken (s, re);
        }
      /* a read whose dependency failed fails, and leaves the application's
         memory as it was, even where the server's runtime ran it */
      if (__atomic_load_n (&re->dep_failed, __ATOMIC_ACQUIRE))
        {
          if (rb_drop (s, rb, h->payload_size))
            return payload_lost (s, re);
        }
      else if (re->unpack)
        {
          char *tmp = malloc (h->payload_size);
          if (tmp == NULL || rb_payload (s, rb, tmp, h->payload_size))
            {
              free (tmp);
              return payload_lost (s, re);
            }
          unpack_rect (re->dst, tmp, re);
          free (tmp);
        }
      else if (rb_payload (s, rb, re->dst, h->payload_size))
        return payload_lost (s, re);
    }
  else if (re->dst != NULL && c.status == CL_COMPLETE
           && re->received != (re->partial ? re->total : re->dst_size))
    c.status = CL_OUT_OF_RESOURCES; /* the data never came */

  REMOTE_TRACE_SPAN (REMOTE_TRACE_COMPLETION, s->index, h->id,
                     POCL_RMSG_COMPLETION, h->payload_size, trace_t0);
  pocl_remote_handlers.complete (s, re, &c);
  return 0;
}

/* A part of a large read's data (READ_DATA).  The event is out of the table
   while the bytes land in dst, so that the sweep of a lost session cannot
   complete it meanwhile (the application could free dst).  */
static int
handle_read_data (remote_server *s, rbuf *rb, const pocl_remote_hdr *h)
{
  uint64_t trace_t0 = REMOTE_TRACE_T0 ();
  pocl_remote_read_data d;
  remote_inflight *re = take_body (s, rb, h, &d, sizeof (d), "read data");
  if (re == NULL)
    return -1;
  uint64_t len = h->payload_size;
  if (re->dst == NULL || re->unpack || d.offset != re->received
      || d.total > re->dst_size || (d.total != re->dst_size && !re->partial)
      || (re->received != 0 && d.total != re->total) || len == 0
      || len > d.total - d.offset)
    {
      POCL_MSG_ERR ("remote: %" PRIu64 " bytes at %" PRIu64 " of %" PRIu64
                    " for event %" PRIu64 " refused\n",
                    len, d.offset, d.total, h->id);
      return fail_taken (s, re);
    }
  /* a part cut short comes again after a resume; one of a read whose
     dependency failed is dropped, as in handle_completion */
  if (__atomic_load_n (&re->dep_failed, __ATOMIC_ACQUIRE)
          ? rb_drop (s, rb, len)
          : rb_payload (s, rb, (char *)re->dst + d.offset, len))
    return payload_lost (s, re);
  re->received += len;
  re->total = d.total;
  REMOTE_TRACE_SPAN (REMOTE_TRACE_READ_DATA, s->index, h->id,
                     POCL_RMSG_READ_DATA, len, trace_t0);
  /* back for the next part and the COMPLETION; as in payload_lost, the
     sweep of a session lost for good may have passed already */
  pocl_remote_event_insert (s, re);
  if (pocl_remote_dead (s) && pocl_remote_event_take (s, re->id) == re)
    return fail_taken (s, re);
  return 0;
}

/* Kernel printf output from the server goes where a local CPU device's
   would: straight to our standard output.  */
static int
handle_output (rbuf *rb, const pocl_remote_hdr *h)
{
  char buf[4096];
  uint64_t left = h->payload_size;
  while (left > 0)
    {
      size_t chunk = left < sizeof (buf) ? (size_t)left : sizeof (buf);
      if (rb_read (rb, buf, chunk))
        return -1;
      size_t off = 0;
      while (off < chunk)
        {
          ssize_t w = write (STDOUT_FILENO, buf + off, chunk - off);
          if (w <= 0)
            break;
          off += (size_t)w;
        }
      left -= chunk;
    }
  return 0;
}

typedef struct reader_arg
{
  remote_server *server;
  int data_socket;
  void (*broken) (remote_server *s);
} reader_arg;

/* Acknowledge the server's messages: after ACK_EVERY of them an ACK is due
   and goes with our next command (remote_send.c), which saves a write
   here and a wake-up of pocld's reader; it goes by itself after ACK_ALONE,
   or after ACK_PAYLOAD payload bytes (the server keeps each message, read
   data included, until then).  */
#define ACK_EVERY 256
#define ACK_ALONE 1024
#define ACK_PAYLOAD (1u << 20)

/* Owes an ACK when due, and sends it by itself when long due.  Never waits
   for the send lock (a sender may hold it while the server, which we must
   keep reading, is busy): a busy lock leaves the ACK to the next command or
   message.  */
static void
maybe_ack (remote_server *s, uint64_t payload_size)
{
  uint64_t total = __atomic_load_n (&s->seen[0], __ATOMIC_ACQUIRE)
                   + __atomic_load_n (&s->seen[1], __ATOMIC_ACQUIRE);
  uint64_t bytes = __atomic_add_fetch (&s->payload_since_ack, payload_size,
                                       __ATOMIC_ACQ_REL);
  uint64_t unacked
      = total - __atomic_load_n (&s->seen_at_last_ack, __ATOMIC_ACQUIRE);
  if (unacked < ACK_EVERY && bytes < ACK_PAYLOAD)
    return;
  /* the senders read it on each command: written once per ACK  */
  if (!__atomic_load_n (&s->ack_due, __ATOMIC_ACQUIRE))
    __atomic_store_n (&s->ack_due, 1, __ATOMIC_RELEASE);
  if ((unacked < ACK_ALONE && bytes < ACK_PAYLOAD)
      || pthread_mutex_trylock (&s->cmd_send_lock))
    return;
  if (!__atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
    {
      pocl_remote_hdr h;
      pocl_remote_ack a;
      pocl_remote_take_ack (s, &h, &a);
      struct iovec iov[2] = { { &h, sizeof (h) }, { &a, sizeof (a) } };
      pocl_remote_link_send (&s->cmd, iov, 2);
    }
  pthread_mutex_unlock (&s->cmd_send_lock);
}

static int
handle_ack (remote_server *s, rbuf *rb)
{
  pocl_remote_ack a;
  unsigned i;
  if (rb_read (rb, &a, sizeof (a)))
    return -1;
  for (i = 0; i < 2; ++i)
    {
      uint64_t old = __atomic_load_n (&s->acked[i], __ATOMIC_ACQUIRE);
      while (a.seen[i] > old
             && !__atomic_compare_exchange_n (&s->acked[i], &old, a.seen[i],
                                              0, __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE))
        ;
    }
  return 0;
}

/* pocld's answer to our UCX offer (client_ucx.c).  */
static int
handle_ucx_hello (remote_server *s, rbuf *rb, const pocl_remote_hdr *h)
{
  pocl_remote_ucx_hello u;
  if (h->payload_size > POCL_REMOTE_MAX_UCX_ADDRESS)
    {
      POCL_MSG_ERR ("remote: UCX_HELLO with a %" PRIu64
                    "-byte address from %s:%u\n",
                    h->payload_size, s->host, s->port);
      return -1;
    }
  void *addr = malloc (h->payload_size + 1);
  int r = addr == NULL || rb_read (rb, &u, sizeof (u))
          || rb_read (rb, addr, h->payload_size);
  if (r == 0)
    pocl_remote_ucx_answered (s, &u, addr, (size_t)h->payload_size);
  free (addr);
  return r ? -1 : 0;
}

static void *
reader_thread (void *p)
{
  reader_arg *arg = (reader_arg *)p;
  remote_server *s = arg->server;
  int data_socket = arg->data_socket;
  void (*on_broken) (remote_server *) = arg->broken;
  free (arg);
  pocl_remote_handlers.reader_started ();
  rbuf *rb = malloc (sizeof (rbuf));
  int broken = 0;
  if (rb != NULL)
    {
      rb->link = data_socket ? &s->data : &s->cmd;
      /* completions come on the command link; the data link's reader
         mostly takes bulk data */
      rb->spin_ns = data_socket ? 0 : pocl_remote_spin_ns ();
      rb->io_failed = 0;
      rb->mark = 0;
      rb->start = rb->end = 0;
    }

  while (rb != NULL)
    {
      pocl_remote_hdr h;
      if (rb_read (rb, &h, sizeof (h)))
        break;
      rb->mark = h.type & ~POCL_RMSG_TYPE_OF (h.type);
      h.type = POCL_RMSG_TYPE_OF (h.type);
      if (rb->mark
          && (!data_socket
              || (h.type != POCL_RMSG_COMPLETION
                  && h.type != POCL_RMSG_READ_DATA)))
        {
          POCL_MSG_ERR ("remote: message type %u with its payload marked "
                        "%#x from %s:%u\n",
                        h.type, rb->mark, s->host, s->port);
          break;
        }
      if (pocl_remote_body_size (h.type) != (int64_t)h.body_size
          || !pocl_remote_msg_taken (h.type, data_socket
                                                 ? POCL_RMSG_AT_CLIENT_DATA
                                                 : POCL_RMSG_AT_CLIENT_CMD))
        {
          POCL_MSG_ERR ("remote: bad message type %u / body %u from %s:%u\n",
                        h.type, h.body_size, s->host, s->port);
          break;
        }
      __atomic_fetch_add (&s->bytes_received,
                          sizeof (h) + h.body_size + h.payload_size,
                          __ATOMIC_RELAXED);
      int r;
      if (h.type == POCL_RMSG_ACK && h.payload_size == 0)
        {
          if (handle_ack (s, rb))
            break;
          continue;
        }
      /* Not counted: pocld does not log it (a resume negotiates anew).  */
      if (h.type == POCL_RMSG_UCX_HELLO)
        {
          if (handle_ucx_hello (s, rb, &h))
            break;
          continue;
        }
      if (h.type == POCL_RMSG_REPLY)
        r = handle_reply (s, rb, &h);
      else if (h.type == POCL_RMSG_COMPLETION)
        r = handle_completion (s, rb, &h);
      else if (h.type == POCL_RMSG_READ_DATA)
        r = handle_read_data (s, rb, &h);
      else if (h.type == POCL_RMSG_OUTPUT)
        r = handle_output (rb, &h);
      else
        {
          POCL_MSG_ERR ("remote: unexpected message type %u\n", h.type);
          r = -1;
        }
      if (r)
        break;
      __atomic_fetch_add (&s->seen[data_socket], 1, __ATOMIC_ACQ_REL);
      pocl_remote_handlers.after_message ();
      pocl_remote_flush_idle (s);
      maybe_ack (s, h.payload_size);
    }

  broken = rb != NULL && rb->io_failed;
  free (rb);
  if (broken)
    on_broken (s);
  else
    pocl_remote_server_lost (s);
  pocl_remote_reader_done (s);
  return NULL;
}

/* Starts the two reader threads of s's current sockets.  */
int
pocl_remote_reader_start (remote_server *s, void (*broken) (remote_server *s))
{
  int i;
  for (i = 0; i < 2; ++i)
    {
      reader_arg *arg = malloc (sizeof (reader_arg));
      if (arg == NULL)
        return -1;
      arg->server = s;
      arg->data_socket = i;
      arg->broken = broken;
      pocl_remote_count_reader (s);
      if (pocl_remote_spawn_reader (s, reader_thread, arg))
        {
          free (arg);
          return -1;
        }
    }
  return 0;
}
