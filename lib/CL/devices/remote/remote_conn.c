/* remote_conn.c - connections to pocld: sockets, handshake, message I/O and
   the reader threads that turn replies and completions into OpenCL state.

   Threads: application threads write their own messages (no hand-off on the
   command path); one reader thread per socket receives.  */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "pocl_remote_auth.h"
#include "pocl_runtime_config.h"
#include "pocl_timing.h"
#include "remote.h"
#include "remote_tls.h"

struct remote_request
{
  uint64_t id;
  int done;
  int detached; /* nobody waits: the reader frees it */
  remote_server *link; /* CONNECT_PEER: the peer, linked on success */
  uint32_t type;
  cl_int status;
  void *payload;
  uint64_t payload_size;
  remote_request *next;
};

static pthread_mutex_t servers_lock = PTHREAD_MUTEX_INITIALIZER;
static remote_server *servers = NULL;

int
pocl_remote_read_full (int fd, struct pocl_remote_tls *tls, void *buf,
                       size_t n)
{
  char *p = (char *)buf;
  while (n > 0)
    {
      ssize_t r = tls ? pocl_remote_tls_read (tls, p, n) : recv (fd, p, n, 0);
      if (r > 0)
        {
          p += r;
          n -= (size_t)r;
        }
      else if (r < 0 && errno == EINTR)
        continue;
      else
        return -1;
    }
  return 0;
}

/* A reader thread's receive buffer: one recv() usually brings in a whole
   message, or several.  Large payloads bypass it and land in place.  */
#define RBUF_SIZE (64 << 10)
typedef struct rbuf
{
  int fd;
  int spin;      /* poll before blocking (recv_spin) */
  int io_failed; /* the socket broke (not the server's messages) */
  unsigned lanes; /* the current message's payload is striped over these */
  struct pocl_remote_tls *tls;
  size_t start, end;
  char data[RBUF_SIZE];
} rbuf;

uint64_t
pocl_remote_spin_ns (void)
{
  /* computed once; threads racing on the first call compute the same */
  static int64_t cached = -1;
  int64_t ns = __atomic_load_n (&cached, __ATOMIC_RELAXED);
  if (ns < 0)
    {
      long cpus = sysconf (_SC_NPROCESSORS_ONLN);
      ns = 1000
           * (int64_t)pocl_get_int_option ("POCL_REMOTE_SPIN_US",
                                           cpus > 2 ? REMOTE_SPIN_US : 0);
      __atomic_store_n (&cached, ns, __ATOMIC_RELAXED);
    }
  return (uint64_t)ns;
}

/* recv, after polling the socket for up to pocl_remote_spin_ns: the next
   completion is often less than that away (the application's next
   command, a migration), and then costs this thread no wake-up.  */
static ssize_t
recv_spin (int fd, void *buf, size_t n)
{
  uint64_t ns = pocl_remote_spin_ns ();
  if (ns > 0)
    {
      uint64_t end = pocl_gettimemono_ns () + ns;
      do
        {
          ssize_t r = recv (fd, buf, n, MSG_DONTWAIT);
          if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            return r;
          pocl_remote_pause ();
        }
      while (pocl_gettimemono_ns () < end);
    }
  return recv (fd, buf, n, 0);
}

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
        return (rb->io_failed = pocl_remote_read_full (rb->fd, rb->tls, d, n));
      ssize_t r = rb->tls ? pocl_remote_tls_read (rb->tls, rb->data, RBUF_SIZE)
                  : rb->spin ? recv_spin (rb->fd, rb->data, RBUF_SIZE)
                             : recv (rb->fd, rb->data, RBUF_SIZE, 0);
      if (r < 0 && errno == EINTR)
        continue;
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

/* The current message's payload (or n bytes of it), striped or not.  */
static int
rb_payload (remote_server *s, rbuf *rb, void *dst, uint64_t n)
{
  if (rb->lanes == 0)
    return rb_read (rb, dst, n);
  if (pocl_remote_stripes_recv (s, rb->lanes, dst, n, rb_read_cb, rb))
    return (rb->io_failed = -1);
  return 0;
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

int
pocl_remote_send_iov (int fd, struct pocl_remote_tls *tls, struct iovec *iov,
                      int count)
{
  if (tls)
    return pocl_remote_tls_write (tls, iov, count);
  while (count > 0)
    {
      struct msghdr mh;
      memset (&mh, 0, sizeof (mh));
      mh.msg_iov = iov;
      mh.msg_iovlen = (size_t)count;
      ssize_t w = sendmsg (fd, &mh, MSG_NOSIGNAL);
      if (w < 0)
        {
          if (errno == EINTR)
            continue;
          return -1;
        }
      size_t done = (size_t)w;
      while (count > 0 && done >= iov->iov_len)
        {
          done -= iov->iov_len;
          ++iov;
          --count;
        }
      if (count > 0)
        {
          iov->iov_base = (char *)iov->iov_base + done;
          iov->iov_len -= done;
        }
    }
  return 0;
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
  pthread_mutex_lock (lock);
  pocl_remote_log_trim (log, __atomic_load_n (&s->acked[data_socket],
                                              __ATOMIC_ACQUIRE));
  int r = pocl_remote_log_append (log, iov, n, stable);
  /* A large payload in one piece goes in stripes over the lanes, if up;
     the log keeps the plain type: sent again, it comes inline.  */
  unsigned lanes = data_socket && total >= POCL_REMOTE_STRIPE_MIN
                           && iov[n - 1].iov_len == total
                       ? __atomic_load_n (&s->lanes, __ATOMIC_ACQUIRE)
                       : 0;
  /* A failed write is the reader's to notice: the message is logged, and
     the reconnect sends it again.  */
  if (r == 0 && !__atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
    {
      if (lanes == 0)
        pocl_remote_send_iov (data_socket ? s->data_fd : s->cmd_fd,
                              data_socket ? s->data_tls : s->cmd_tls, iov, n);
      else
        {
          h.type |= POCL_RMSG_LANES (lanes);
          if (pocl_remote_send_iov (s->data_fd, s->data_tls, iov, n - 1) == 0)
            pocl_remote_stripes_send (s, lanes, iov[n - 1].iov_base, total);
        }
    }
  pthread_mutex_unlock (lock);
  __atomic_fetch_add (&s->bytes_sent, sizeof (h) + body_size + total,
                      __ATOMIC_RELAXED);
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
pocl_remote_event_insert (remote_server *s, remote_event *re)
{
  unsigned b = (unsigned)(re->id & (REMOTE_EVENT_BUCKETS - 1));
  pthread_mutex_lock (&s->table_lock);
  re->hash_next = s->events[b];
  s->events[b] = re;
  pthread_mutex_unlock (&s->table_lock);
}

remote_event *
pocl_remote_event_take (remote_server *s, uint64_t id)
{
  unsigned b = (unsigned)(id & (REMOTE_EVENT_BUCKETS - 1));
  pthread_mutex_lock (&s->table_lock);
  remote_event **p = &s->events[b];
  while (*p && (*p)->id != id)
    p = &(*p)->hash_next;
  remote_event *re = *p;
  if (re)
    *p = re->hash_next;
  pthread_mutex_unlock (&s->table_lock);
  return re;
}

uint64_t
pocl_remote_server_to_client_time (remote_server *s, uint64_t ts)
{
  return ts ? (uint64_t)((int64_t)ts - s->clock_offset_ns) : 0;
}

/* The reply to a CONNECT_PEER of a to b.  */
static void
peer_linked (remote_server *a, remote_server *b, cl_int status)
{
  pthread_mutex_lock (&servers_lock);
  if (status == CL_SUCCESS)
    {
      __atomic_fetch_or (&a->peers, (uint64_t)1 << b->index, __ATOMIC_RELEASE);
      __atomic_fetch_or (&b->peers, (uint64_t)1 << a->index, __ATOMIC_RELEASE);
    }
  /* a failed pair may be tried again by the next context */
  a->linking &= ~((uint64_t)1 << b->index);
  pthread_mutex_unlock (&servers_lock);
  if (status == CL_SUCCESS)
    POCL_MSG_PRINT_INFO ("remote: %s:%u and %s:%u are peers\n", a->host,
                         a->port, b->host, b->port);
  else
    POCL_MSG_WARN ("remote: %s:%u cannot reach its peer %s:%u (%d); "
                   "their commands synchronise through this client\n",
                   a->host, a->port, b->peer_host, b->peer_port, status);
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
      if (req->link)
        peer_linked (s, req->link, r.status);
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
unpack_rect (char *dst, const char *src, const remote_event *re)
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
fail_taken (remote_server *s, remote_event *re)
{
  pocl_remote_completion c;
  memset (&c, 0, sizeof (c));
  c.status = CL_DEVICE_NOT_AVAILABLE;
  pocl_remote_complete (s, re, &c);
  return -1;
}

/* A completion cut inside its payload: back into the table, for the
   server to send again after a resume.  Once the session is lost for good
   the sweep may have passed already: then fail it here.  */
static int
payload_lost (remote_server *s, remote_event *re)
{
  pocl_remote_event_insert (s, re);
  if (pocl_remote_dead (s) && pocl_remote_event_take (s, re->id) == re)
    return fail_taken (s, re);
  return -1;
}

/* Reads a message's body and takes its event out of the table; NULL (the
   session is lost) if the socket broke or the event is unknown.  */
static remote_event *
take_body (remote_server *s, rbuf *rb, const pocl_remote_hdr *h, void *body,
           size_t size, const char *what)
{
  if (rb_read (rb, body, size))
    return NULL;
  remote_event *re = pocl_remote_event_take (s, h->id);
  if (re == NULL)
    POCL_MSG_ERR ("remote: %s for unknown event %" PRIu64 "\n", what, h->id);
  return re;
}

static int
handle_completion (remote_server *s, rbuf *rb, const pocl_remote_hdr *h)
{
  pocl_remote_completion c;
  remote_event *re = take_body (s, rb, h, &c, sizeof (c), "completion");
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
      if (re->unpack)
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

  pocl_remote_complete (s, re, &c);
  return 0;
}

/* A part of a large read's data (READ_DATA).  The event is out of the table
   while the bytes land in dst, so that the sweep of a lost session cannot
   complete it meanwhile (the application could free dst).  */
static int
handle_read_data (remote_server *s, rbuf *rb, const pocl_remote_hdr *h)
{
  pocl_remote_read_data d;
  remote_event *re = take_body (s, rb, h, &d, sizeof (d), "read data");
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
  /* a part cut short comes again after a resume */
  if (rb_payload (s, rb, (char *)re->dst + d.offset, len))
    return payload_lost (s, re);
  re->received += len;
  re->total = d.total;
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
} reader_arg;

/* Acknowledge the server's messages every this many, or after this many
   payload bytes: the server keeps each one (read data included) until
   then.  */
#define ACK_EVERY 64
#define ACK_PAYLOAD (1u << 20)

/* Sends our counts when due.  Never waits for the send lock (a sender may
   hold it while the server, which we must keep reading, is busy): a busy
   lock postpones the ACK to the next message.  */
static void
maybe_ack (remote_server *s, uint64_t payload_size)
{
  pocl_remote_ack a;
  a.seen[0] = __atomic_load_n (&s->seen[0], __ATOMIC_ACQUIRE);
  a.seen[1] = __atomic_load_n (&s->seen[1], __ATOMIC_ACQUIRE);
  uint64_t total = a.seen[0] + a.seen[1];
  uint64_t bytes = __atomic_add_fetch (&s->payload_since_ack, payload_size,
                                       __ATOMIC_ACQ_REL);
  if ((total - __atomic_load_n (&s->seen_at_last_ack, __ATOMIC_ACQUIRE)
       < ACK_EVERY
       && bytes < ACK_PAYLOAD)
      || pthread_mutex_trylock (&s->cmd_send_lock))
    return;
  if (!__atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
    {
      pocl_remote_hdr h = { POCL_RMSG_ACK, sizeof (a), 0, 0 };
      struct iovec iov[2] = { { &h, sizeof (h) }, { &a, sizeof (a) } };
      pocl_remote_send_iov (s->cmd_fd, s->cmd_tls, iov, 2);
      __atomic_store_n (&s->seen_at_last_ack, total, __ATOMIC_RELEASE);
      __atomic_store_n (&s->payload_since_ack, 0, __ATOMIC_RELEASE);
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

static void *
reader_thread (void *p)
{
  reader_arg *arg = (reader_arg *)p;
  remote_server *s = arg->server;
  int data_socket = arg->data_socket;
  free (arg);
  rbuf *rb = malloc (sizeof (rbuf));
  int broken = 0;
  if (rb != NULL)
    {
      rb->fd = data_socket ? s->data_fd : s->cmd_fd;
      rb->tls = data_socket ? s->data_tls : s->cmd_tls;
      /* completions come on the command socket; the data socket's reader
         mostly takes bulk data */
      rb->spin = !data_socket;
      rb->io_failed = 0;
      rb->lanes = 0;
      rb->start = rb->end = 0;
    }

  while (rb != NULL)
    {
      pocl_remote_hdr h;
      if (rb_read (rb, &h, sizeof (h)))
        break;
      rb->lanes = POCL_RMSG_LANE_COUNT (h.type);
      h.type = POCL_RMSG_TYPE_OF (h.type);
      if (rb->lanes
          && (!data_socket || rb->lanes > POCL_REMOTE_MAX_LANES
              || (h.type != POCL_RMSG_COMPLETION
                  && h.type != POCL_RMSG_READ_DATA)))
        {
          POCL_MSG_ERR ("remote: message type %u striped over %u lanes "
                        "from %s:%u\n",
                        h.type, rb->lanes, s->host, s->port);
          break;
        }
      if (pocl_remote_body_size (h.type) != (int64_t)h.body_size)
        {
          POCL_MSG_ERR ("remote: bad message type %u / body %u from %s:%u\n",
                        h.type, h.body_size, s->host, s->port);
          break;
        }
      __atomic_fetch_add (&s->bytes_received,
                          sizeof (h) + h.body_size + h.payload_size,
                          __ATOMIC_RELAXED);
      int r;
      if (h.type == POCL_RMSG_ACK && !data_socket && h.payload_size == 0)
        {
          if (handle_ack (s, rb))
            break;
          continue;
        }
      if (h.type == POCL_RMSG_REPLY && !data_socket)
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
      pocl_remote_complete_deferred ();
      maybe_ack (s, h.payload_size);
    }

  broken = rb != NULL && rb->io_failed;
  free (rb);
  if (broken)
    pocl_remote_connection_broken (s);
  else
    pocl_remote_server_lost (s);
  pocl_remote_reader_done (s);
  return NULL;
}

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
  pthread_attr_t attr;
  pthread_attr_init (&attr);
  pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int r = pthread_create (&t, &attr, fn, arg);
  pthread_attr_destroy (&attr);
  if (r)
    pocl_remote_reader_done (s);
  return r ? -1 : 0;
}

/* Starts the two reader threads of s's current sockets.  */
int
pocl_remote_start_readers (remote_server *s)
{
  int i;
  for (i = 0; i < 2; ++i)
    {
      reader_arg *arg = malloc (sizeof (reader_arg));
      if (arg == NULL)
        return -1;
      arg->server = s;
      arg->data_socket = i;
      pocl_remote_count_reader (s);
      if (pocl_remote_spawn_reader (s, reader_thread, arg))
        {
          free (arg);
          return -1;
        }
    }
  return 0;
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
  shutdown (s->cmd_fd, SHUT_RDWR);
  shutdown (s->data_fd, SHUT_RDWR);
  pocl_remote_shutdown_lanes (s);

  pocl_remote_set_available (s, CL_FALSE);

  unsigned b;
  pocl_remote_completion c;
  memset (&c, 0, sizeof (c));
  c.status = CL_DEVICE_NOT_AVAILABLE;
  for (b = 0; b < REMOTE_EVENT_BUCKETS; ++b)
    {
      for (;;)
        {
          pthread_mutex_lock (&s->table_lock);
          remote_event *re = s->events[b];
          if (re)
            s->events[b] = re->hash_next;
          pthread_mutex_unlock (&s->table_lock);
          if (re == NULL)
            break;
          pocl_remote_complete (s, re, &c);
          pocl_remote_complete_deferred ();
        }
    }
}

static void
set_socket_options (int fd)
{
  int one = 1;
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  /* A silently dead server or link surfaces as an error in bounded time
     instead of a hang.  */
  setsockopt (fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof (one));
  int idle = 5, intvl = 1, cnt = 5;
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof (idle));
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof (intvl));
  setsockopt (fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof (cnt));
  unsigned user_timeout_ms = 10000;
  setsockopt (fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
              sizeof (user_timeout_ms));
}

int
pocl_remote_connect (const char *host, uint16_t port, int timeout_ms)
{
  struct addrinfo hints, *res = NULL, *ai;
  char portstr[8];
  memset (&hints, 0, sizeof (hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  snprintf (portstr, sizeof (portstr), "%u", (unsigned)port);
  if (getaddrinfo (host, portstr, &hints, &res) != 0)
    {
      POCL_MSG_ERR ("remote: cannot resolve %s\n", host);
      return -1;
    }

  int fd = -1;
  for (ai = res; ai; ai = ai->ai_next)
    {
      fd = socket (ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                   ai->ai_protocol);
      if (fd < 0)
        continue;
      int flags = fcntl (fd, F_GETFL);
      fcntl (fd, F_SETFL, flags | O_NONBLOCK);
      int r = connect (fd, ai->ai_addr, ai->ai_addrlen);
      if (r < 0 && errno == EINPROGRESS)
        {
          struct pollfd pfd = { fd, POLLOUT, 0 };
          int err = 0;
          socklen_t len = sizeof (err);
          if (poll (&pfd, 1, timeout_ms) == 1
              && getsockopt (fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0
              && err == 0)
            r = 0;
        }
      if (r == 0)
        {
          fcntl (fd, F_SETFL, flags);
          set_socket_options (fd);
          break;
        }
      close (fd);
      fd = -1;
    }
  freeaddrinfo (res);
  return fd;
}

/* The pre-shared key, from POCL_REMOTE_PSK or the file named by
   POCL_REMOTE_PSK_FILE, into key (POCL_REMOTE_MAX_KEY bytes): its length, 0
   without one, -1 for a bad one (logged).  */
long
pocl_remote_client_key (char *key)
{
  const char *file = getenv ("POCL_REMOTE_PSK_FILE");
  const char *text = getenv ("POCL_REMOTE_PSK");
  long n;
  if (file == NULL && text == NULL)
    return 0;
  if (!pocl_remote_auth_available ())
    {
      POCL_MSG_ERR ("remote: a pre-shared key needs OpenSSL, which this "
                    "driver was built without\n");
      return -1;
    }
  if (file != NULL)
    {
      int loose = 0;
      n = pocl_remote_key_file (file, key, &loose);
      if (n < 0)
        {
          POCL_MSG_ERR ("remote: cannot read the key file %s: %s\n", file,
                        strerror (errno));
          return -1;
        }
    }
  else
    {
      n = (long)pocl_remote_key_trim (text, strlen (text));
      memcpy (key, text, (size_t)n);
    }
  if (n == 0)
    POCL_MSG_ERR ("remote: the pre-shared key must have %u to %u bytes\n",
                  POCL_REMOTE_MIN_KEY, POCL_REMOTE_MAX_KEY);
  return n > 0 ? n : -1;
}

/* The handshake on fd (HELLO, AUTH_CHALLENGE, AUTH, HELLO_REPLY), bounded by
   the socket timeout.  With a key (key_len > 0) the server must prove it;
   without one, a server that requires one is refused.  */
cl_int
pocl_remote_handshake (remote_server *s, int fd, struct pocl_remote_tls *tls,
                       uint32_t role, uint32_t lane, const uint8_t *session_id,
                       const uint64_t *seen, const char *key, size_t key_len,
                       pocl_remote_hello_reply *out, uint64_t *t0,
                       uint64_t *t1)
{
  pocl_remote_hdr h;
  pocl_remote_hello hello;
  pocl_remote_auth_challenge ch;
  pocl_remote_auth auth;
  memset (&hello, 0, sizeof (hello));
  memset (&auth, 0, sizeof (auth));
  hello.magic = POCL_REMOTE_MAGIC;
  hello.version = POCL_REMOTE_PROTOCOL_VERSION;
  hello.role = role;
  hello.peer_index = lane;
  if (session_id)
    memcpy (hello.session_id, session_id, 16);
  if (seen)
    memcpy (hello.seen, seen, sizeof (hello.seen));
  if (getrandom (hello.nonce, sizeof (hello.nonce), 0)
      != (ssize_t)sizeof (hello.nonce))
    return CL_OUT_OF_HOST_MEMORY;

  h.type = POCL_RMSG_HELLO;
  h.body_size = sizeof (hello);
  h.payload_size = 0;
  h.id = 0;
  struct iovec iov[2] = { { &h, sizeof (h) }, { &hello, sizeof (hello) } };

  struct timeval tv = { 10, 0 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
  if (tls)
    pocl_remote_tls_set_timeout (tls, 10000);
  hello.client_time_ns = pocl_gettimemono_ns ();
  if (pocl_remote_send_iov (fd, tls, iov, 2)
      || pocl_remote_read_full (fd, tls, &h, sizeof (h)))
    return CL_DEVICE_NOT_AVAILABLE;
  /* a refusal (version, session limit) comes at once as HELLO_REPLY */
  if (h.type == POCL_RMSG_HELLO_REPLY && h.body_size == sizeof (*out)
      && h.payload_size == 0
      && pocl_remote_read_full (fd, tls, out, sizeof (*out)) == 0)
    return out->status != CL_SUCCESS ? out->status : CL_DEVICE_NOT_AVAILABLE;
  if (h.type != POCL_RMSG_AUTH_CHALLENGE || h.body_size != sizeof (ch)
      || h.payload_size != 0
      || pocl_remote_read_full (fd, tls, &ch, sizeof (ch)))
    return CL_DEVICE_NOT_AVAILABLE;
  h.type = POCL_RMSG_AUTH;
  h.body_size = sizeof (auth);
  iov[0].iov_base = &h; /* send_iov may have advanced the entries */
  iov[0].iov_len = sizeof (h);
  iov[1].iov_base = &auth;
  iov[1].iov_len = sizeof (auth);
  if (key_len > 0)
    {
      uint8_t want[POCL_REMOTE_MAC_SIZE];
      if (pocl_remote_auth_proof (key, key_len, 0, &hello, ch.nonce,
                                  auth.proof))
        return CL_DEVICE_NOT_AVAILABLE;
      if (!(ch.flags & POCL_REMOTE_AUTH_REQUIRED)
          || pocl_remote_auth_proof (key, key_len, 1, &hello, ch.nonce, want)
          || !pocl_remote_auth_equal (want, ch.proof))
        {
          /* Our proof still goes out: a server with another key then logs
             the mismatch too.  It reveals nothing about the key.  */
          pocl_remote_send_iov (fd, tls, iov, 2);
          POCL_MSG_ERR ("remote: pocld at %s:%u does not prove our "
                        "pre-shared key (it has another one, or none): not "
                        "using it\n",
                        s->host, s->port);
          return CL_DEVICE_NOT_AVAILABLE;
        }
    }
  else if (ch.flags & POCL_REMOTE_AUTH_REQUIRED)
    {
      pocl_remote_send_iov (fd, tls, iov, 2); /* so that the server logs why */
      POCL_MSG_ERR ("remote: pocld at %s:%u requires a pre-shared key "
                    "(POCL_REMOTE_PSK or POCL_REMOTE_PSK_FILE)\n",
                    s->host, s->port);
      return CL_DEVICE_NOT_AVAILABLE;
    }
  iov[1].iov_base = &auth;
  iov[1].iov_len = sizeof (auth);
  /* the clock offset is estimated around this last round trip */
  *t0 = pocl_gettimemono_ns ();
  if (pocl_remote_send_iov (fd, tls, iov, 2)
      || pocl_remote_read_full (fd, tls, &h, sizeof (h)))
    {
      if (key_len > 0)
        POCL_MSG_ERR ("remote: pocld at %s:%u refused our pre-shared key\n",
                      s->host, s->port);
      return CL_DEVICE_NOT_AVAILABLE;
    }
  if (h.type != POCL_RMSG_HELLO_REPLY || h.body_size != sizeof (*out)
      || h.payload_size != 0
      || pocl_remote_read_full (fd, tls, out, sizeof (*out)))
    return CL_DEVICE_NOT_AVAILABLE;
  *t1 = pocl_gettimemono_ns ();
  tv.tv_sec = 0;
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
  if (tls)
    pocl_remote_tls_set_timeout (tls, -1);
  if (out->magic != POCL_REMOTE_MAGIC
      || out->version != POCL_REMOTE_PROTOCOL_VERSION)
    {
      POCL_MSG_ERR ("remote: server speaks protocol version %u, we %u\n",
                    out->version, POCL_REMOTE_PROTOCOL_VERSION);
      return CL_DEVICE_NOT_AVAILABLE;
    }
  if (out->status != CL_SUCCESS && key_len > 0)
    POCL_MSG_ERR ("remote: pocld at %s:%u refused our pre-shared key\n",
                  s->host, s->port);
  return out->status;
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

  s->cmd_fd = pocl_remote_connect (s->host, s->port, (int)timeout_ms);
  if (s->cmd_fd < 0)
    return CL_DEVICE_NOT_AVAILABLE;
  if (pocl_remote_tls_wanted ()
      && (s->cmd_tls = pocl_remote_tls_start (s->cmd_fd, s->host, s->port,
                                              POCL_REMOTE_ROLE_COMMAND, NULL,
                                              (int)timeout_ms))
             == NULL)
    return CL_DEVICE_NOT_AVAILABLE;
  err = pocl_remote_handshake (s, s->cmd_fd, s->cmd_tls,
                               POCL_REMOTE_ROLE_COMMAND, 0, NULL, NULL, key,
                               (size_t)key_len, &rep, &t0, &t1);
  if (err != CL_SUCCESS)
    return err;
  memcpy (s->session_id, rep.session_id, 16);
  s->num_devices = rep.num_devices;
  s->clock_offset_ns = (int64_t)rep.server_time_ns - (int64_t)((t0 + t1) / 2);

  s->data_fd = pocl_remote_connect (
      s->host, (uint16_t)(s->port + POCL_REMOTE_DATA_PORT_OFFSET),
      (int)timeout_ms);
  if (s->data_fd < 0)
    return CL_DEVICE_NOT_AVAILABLE;
  if (pocl_remote_tls_wanted ()
      && (s->data_tls = pocl_remote_tls_start (
              s->data_fd, s->host,
              (unsigned)s->port + POCL_REMOTE_DATA_PORT_OFFSET,
              POCL_REMOTE_ROLE_DATA, s->session_id, (int)timeout_ms))
             == NULL)
    return CL_DEVICE_NOT_AVAILABLE;
  err = pocl_remote_handshake (s, s->data_fd, s->data_tls,
                               POCL_REMOTE_ROLE_DATA, 0, s->session_id, NULL,
                               key, (size_t)key_len, &rep, &u0, &u1);
  memset (key, 0, sizeof (key));
  if (err != CL_SUCCESS)
    return err;

  s->pid = getpid ();
  int lanes = pocl_remote_lanes_reserve (s);
  if (pocl_remote_start_readers (s))
    {
      if (lanes)
        pocl_remote_reader_done (s);
      return CL_OUT_OF_HOST_MEMORY;
    }
  if (lanes)
    pocl_remote_lanes_start (s);
  POCL_MSG_PRINT_INFO ("remote: connected to %s:%u, %u devices\n", s->host,
                       s->port, s->num_devices);
  return CL_SUCCESS;
}

/* Finds or opens the connection to host:port.  peer_host/peer_port: where
   its peers reach it (NULL: host, port + 2).  */
remote_server *
pocl_remote_server_get (const char *host, uint16_t port, const char *peer_host,
                        uint16_t peer_port, cl_int *err)
{
  static uint32_t next_index = 0;
  remote_server *s;
  pthread_mutex_lock (&servers_lock);
  for (s = servers; s; s = s->next)
    if (s->port == port && strcmp (s->host, host) == 0)
      break;
  if (s)
    {
      pthread_mutex_unlock (&servers_lock);
      *err = pocl_remote_dead (s) ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
      return s;
    }

  s = calloc (1, sizeof (remote_server));
  if (s == NULL)
    {
      pthread_mutex_unlock (&servers_lock);
      *err = CL_OUT_OF_HOST_MEMORY;
      return NULL;
    }
  s->host = strdup (host);
  s->port = port;
  s->index = next_index++;
  s->peer_host = strdup (peer_host ? peer_host : host);
  s->peer_port
      = peer_host ? peer_port : (uint16_t)(port + POCL_REMOTE_PEER_PORT_OFFSET);
  s->cmd_fd = s->data_fd = s->lane_opening = -1;
  pthread_mutex_init (&s->cmd_send_lock, NULL);
  pthread_mutex_init (&s->data_send_lock, NULL);
  pthread_mutex_init (&s->data_order_lock, NULL);
  pthread_mutex_init (&s->table_lock, NULL);
  pthread_cond_init (&s->reply_cond, NULL);

  *err = server_connect (s);
  if (*err != CL_SUCCESS)
    {
      POCL_MSG_ERR ("remote: cannot connect to pocld at %s:%u\n", host, port);
      __atomic_store_n (&s->dead, 1, __ATOMIC_RELEASE);
    }
  s->next = servers;
  servers = s;
  pthread_mutex_unlock (&servers_lock);
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
  pthread_mutex_lock (&servers_lock);
  uint64_t bit = (uint64_t)1 << b->index;
  int start = !(pocl_remote_linked (a, b) || pocl_remote_linked (b, a)
                || (a->linking & bit) || (b->linking & ((uint64_t)1 << a->index)));
  if (start)
    a->linking |= bit;
  pthread_mutex_unlock (&servers_lock);
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
  if (pthread_mutex_trylock (&servers_lock))
    return;
  for (s = servers; s; s = s->next)
    if (s->pid == getpid () && !pocl_remote_dead (s)
        && !__atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
      {
        /* the server closes now: no reconnect thread while we exit */
        __atomic_store_n (&s->leaving, 1, __ATOMIC_RELEASE);
        pocl_remote_send (s, 0, POCL_RMSG_BYE, 0, NULL, 0, NULL, 0);
      }
  pthread_mutex_unlock (&servers_lock);
}
