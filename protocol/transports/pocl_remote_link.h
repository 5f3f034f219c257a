/* pocl_remote_link.h - links: the first of the two layers of the transport
   interface (doc/protocol.md, "Transports"), shared by the client driver (C)
   and pocld (C++).

   A link is one connection of a session: the client's command or data
   socket, one of its lanes, a peer link or a peer lane.  It is an ops table
   and the transport's state; everything above it sends and receives through
   the ops alone.  TCP (pocl_remote_link_tcp.c) and TLS
   (pocl_remote_link_tls.c) implement it.  How a link comes to be (connect,
   STARTTLS, the TLS handshake) is each side's transport table's business
   (the client's remote_transport.c, pocld's transport.cc); a link can
   always be rebuilt from its socket and the transport's state, which is
   what pocld's listener hands to a session process.

   Threads: one receiver at a time, and one sender at a time (callers
   serialise sends under their own lock); a receive and a send may run at
   once.  shutdown may come from any thread at any time.  A link is a small
   value: copies share the transport's state, and only one of them is
   closed.  */

#ifndef POCL_REMOTE_LINK_H
#define POCL_REMOTE_LINK_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pocl_remote_link pocl_remote_link;

typedef struct pocl_remote_link_ops
{
  const char *name;
  /* Writes the pieces of one message in order, whole: 0, or -1 once the
     link broke.  May advance the entries of iov.  */
  int (*send) (pocl_remote_link *l, struct iovec *iov, int count);
  /* Receives up to n bytes: their count (> 0), 0 at the peer's end, -1 on
     an error or when a wait passed the link's timeout (EINTR is retried
     inside).  With spin_ns > 0 the transport may poll that long before it
     blocks: the next message is often that close, and then costs the
     receiving thread no wake-up.  */
  long (*recv) (pocl_remote_link *l, void *buf, size_t n, uint64_t spin_ns);
  /* Receives exactly n bytes: 0, or -1 (an error or the end).  */
  int (*recv_full) (pocl_remote_link *l, void *buf, size_t n);
  /* Bounds each later wait of a receive to ms (<= 0: no bound).  Called by
     the link's receiver.  */
  void (*set_timeout) (pocl_remote_link *l, int ms);
  /* Breaks the link in both directions: a send or receive blocked in
     another thread returns an error.  Frees nothing.  */
  void (*shutdown) (pocl_remote_link *l);
  /* Frees the transport's state and the connection; nobody uses the link
     any more.  */
  void (*close) (pocl_remote_link *l);
} pocl_remote_link_ops;

struct pocl_remote_link
{
  const pocl_remote_link_ops *ops; /* never NULL once cleared or set */
  /* The link's socket (-1: none), and what the transport keeps besides
     (TLS: its pocl_remote_tls).  Only the transport's own file looks into
     them; a link is connected while fd >= 0.  */
  int fd;
  void *state;
};

/* A link with no connection: every operation fails or does nothing.  */
extern const pocl_remote_link_ops pocl_remote_no_link_ops;
/* The links of the stream transports.  */
extern const pocl_remote_link_ops pocl_remote_tcp_link_ops;
#ifdef POCL_REMOTE_HAVE_TLS
struct pocl_remote_tls;
extern const pocl_remote_link_ops pocl_remote_tls_link_ops;
/* A TLS link over t, whose handshake is done, and its socket.  */
void pocl_remote_tls_link (pocl_remote_link *l, struct pocl_remote_tls *t);
#endif

/* Links that other threads may shut down meanwhile (see shutdown) change
   through these: ops and fd are stored atomically, fd last.  */
static inline void
pocl_remote_link_set (pocl_remote_link *slot, const pocl_remote_link *l)
{
  slot->state = l->state;
  __atomic_store_n (&slot->ops, l->ops, __ATOMIC_RELAXED);
  __atomic_store_n (&slot->fd, l->fd, __ATOMIC_RELEASE);
}

/* A link with no connection (pocl_remote_no_link_ops).  */
static inline void
pocl_remote_link_clear (pocl_remote_link *l)
{
  __atomic_store_n (&l->fd, -1, __ATOMIC_RELEASE);
  __atomic_store_n (&l->ops, &pocl_remote_no_link_ops, __ATOMIC_RELAXED);
  l->state = NULL;
}

/* A TCP link over the connected, blocking socket fd.  */
static inline void
pocl_remote_tcp_link (pocl_remote_link *l, int fd)
{
  pocl_remote_link t;
  t.ops = &pocl_remote_tcp_link_ops;
  t.fd = fd;
  t.state = NULL;
  pocl_remote_link_set (l, &t);
}

static inline int
pocl_remote_link_up (const pocl_remote_link *l)
{
  return __atomic_load_n (&l->fd, __ATOMIC_ACQUIRE) >= 0;
}

static inline int
pocl_remote_link_send (pocl_remote_link *l, struct iovec *iov, int count)
{
  return l->ops->send (l, iov, count);
}

static inline long
pocl_remote_link_recv (pocl_remote_link *l, void *buf, size_t n,
                       uint64_t spin_ns)
{
  return l->ops->recv (l, buf, n, spin_ns);
}

static inline int
pocl_remote_link_recv_full (pocl_remote_link *l, void *buf, size_t n)
{
  return l->ops->recv_full (l, buf, n);
}

static inline void
pocl_remote_link_set_timeout (pocl_remote_link *l, int ms)
{
  l->ops->set_timeout (l, ms);
}

/* Any thread, any time: reads only what pocl_remote_link_set stores
   atomically.  */
static inline void
pocl_remote_link_shutdown (pocl_remote_link *l)
{
  if (__atomic_load_n (&l->fd, __ATOMIC_ACQUIRE) < 0)
    return;
  const pocl_remote_link_ops *ops
      = __atomic_load_n (&l->ops, __ATOMIC_RELAXED);
  if (ops != NULL)
    ops->shutdown (l);
}

/* Closes the link and clears it.  */
static inline void
pocl_remote_link_close (pocl_remote_link *l)
{
  if (l->ops != NULL)
    l->ops->close (l);
  pocl_remote_link_clear (l);
}

/* Reads and drops n bytes (a payload nobody wants): 0 or -1.  */
static inline int
pocl_remote_link_discard (pocl_remote_link *l, uint64_t n)
{
  char sink[16384];
  while (n > 0)
    {
      size_t k = n < sizeof (sink) ? (size_t)n : sizeof (sink);
      if (l->ops->recv_full (l, sink, k))
        return -1;
      n -= k;
    }
  return 0;
}

/* Receives exactly n bytes within timeout_ms in all (handshakes): 0, or -1.
   The link's receives are unbounded again afterwards.  */
static inline int
pocl_remote_link_recv_deadline (pocl_remote_link *l, void *buf, size_t n,
                                int timeout_ms)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  long long deadline = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 + timeout_ms;
  char *p = (char *)buf;
  int failed = 0;
  while (n > 0 && !failed)
    {
      clock_gettime (CLOCK_MONOTONIC, &ts);
      long long left = deadline - (ts.tv_sec * 1000LL + ts.tv_nsec / 1000000);
      if (left <= 0)
        {
          failed = 1;
          break;
        }
      l->ops->set_timeout (l, (int)left);
      long r = l->ops->recv (l, p, n, 0);
      if (r <= 0)
        failed = 1;
      else
        {
          p += r;
          n -= (size_t)r;
        }
    }
  l->ops->set_timeout (l, 0);
  return failed ? -1 : 0;
}

/* What the links share (pocl_remote_link.c): recv_full as recv until n,
   and the monotonic clock of the spins.  */
int pocl_remote_stream_recv_full (pocl_remote_link *l, void *buf, size_t n);
uint64_t pocl_remote_link_now_ns (void);

#ifdef __cplusplus
}
#endif

#endif
