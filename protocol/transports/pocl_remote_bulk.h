/* pocl_remote_bulk.h - bulk: the second layer of the transport interface
   (doc/protocol.md, "Transports"), shared by the client driver (C) and
   pocld (C++).

   A message's header and body go on its link (pocl_remote_link.h); its
   payload, when large, may go another way: that is a bulk transport.  The
   client's DATA, pocld's READ_DATA and COMPLETION payloads and the peers'
   PEER_DATA move through one.  "inline" sends the payload on the link
   itself; "lanes" stripes it over the link and the connection's lanes
   (pocl_remote_lanes.h).  Each connection has one bulk transport, chosen
   once the connection is up (and may be changed while no payload moves);
   the sender marks in the header's type how a payload comes (mark), and the
   receiver hands that mark back to recv.

   A bulk transport may fail part-way: recv reports the gap-free prefix
   that arrived, and whether the link is still in step (PARTIAL: the
   receiver asks for the rest again, as peers do with PEER_ACK and
   POCL_REMOTE_PEER_ACK_RESEND) or broken.  One that moves bytes from
   registered memory registers it once (register_memory; a no-op for the
   stream transports), and one that must be driven while it waits does so
   inside send and recv, which block until the payload moved.  */

#ifndef POCL_REMOTE_BULK_H
#define POCL_REMOTE_BULK_H

#include <pthread.h>
#include <stdint.h>

#include "pocl_remote_link.h"
#include "pocl_remote_protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What send and recv return.  */
#define POCL_REMOTE_BULK_OK 0
/* Not all of the payload came, but the link is in step: what its message
   carried on the link came whole.  */
#define POCL_REMOTE_BULK_PARTIAL 1
/* The link broke.  */
#define POCL_REMOTE_BULK_BROKEN -1
/* The mark names a way this connection does not have (a protocol error).  */
#define POCL_REMOTE_BULK_REFUSED -2

/* How the receiver takes a payload.  */
typedef struct pocl_remote_bulk_io
{
  /* Reads n bytes of the link into dst (0 or -1): the caller's buffered
     reader, which may hold the payload's first bytes already.  NULL: the
     link's recv_full.  */
  int (*recv0) (void *arg, void *dst, uint64_t n);
  void *recv0_arg;
  /* The gap-free prefix of the payload that is in, whenever it grew by
     `step` bytes or more since the last call (from: that call's `to`), so
     that the bytes go on while the rest comes.  From the transport's
     threads, one call at a time.  NULL: no calls.  */
  void (*grown) (void *arg, uint64_t from, uint64_t to);
  void *grown_arg;
  uint64_t step;
} pocl_remote_bulk_io;

/* In the last `step` bytes of a payload the listener hears of each
   POCL_REMOTE_BULK_TAIL bytes, and of the end whatever its size: what its
   device writes after the last byte is then at most this much, not a step
   (4 MiB: 80 us of an H100's page-locked write).  */
#define POCL_REMOTE_BULK_TAIL (1u << 20)

/* The piece a listener told of the first `told` bytes of n hears of next:
   io->step, or POCL_REMOTE_BULK_TAIL in the last step.  */
static inline uint64_t
pocl_remote_bulk_piece (const pocl_remote_bulk_io *io, uint64_t told,
                        uint64_t n)
{
  return n - told <= io->step && io->step > POCL_REMOTE_BULK_TAIL
             ? POCL_REMOTE_BULK_TAIL
             : io->step;
}

/* Whether a listener told of the first `told` bytes of n hears of the
   first `to` now.  */
static inline int
pocl_remote_bulk_tells (const pocl_remote_bulk_io *io, uint64_t told,
                        uint64_t to, uint64_t n)
{
  return to > told
         && (to - told >= pocl_remote_bulk_piece (io, told, n) || to == n);
}

/* How the sender gives a payload whose bytes are still being produced (a
   device's reads into it): ready (arg, upto) returns once the payload's
   first `upto` bytes are in place.  The transport calls it before those
   bytes leave, from its threads, any number of times.  NULL: every byte
   is in place.  */
typedef struct pocl_remote_bulk_src
{
  void (*ready) (void *arg, uint64_t upto);
  void *arg;
} pocl_remote_bulk_src;

typedef struct pocl_remote_bulk pocl_remote_bulk;

typedef struct pocl_remote_bulk_ops
{
  const char *name;
  /* The bits of the header's type under which an n-byte payload leaves
     now (0: inline, in the message's own send).  The caller holds the
     link's send lock from here to the end of send.  */
  uint32_t (*mark) (pocl_remote_bulk *b, uint64_t n);
  /* The payload [p, p + n) of a message whose header (with `mark`) and body
     went out on `link`; its bytes as src says they are ready.  */
  int (*send) (pocl_remote_bulk *b, pocl_remote_link *link, uint32_t mark,
               const void *p, uint64_t n, const pocl_remote_bulk_src *src);
  /* The payload of a message that came on `link` with `mark`, into dst
     (NULL: dropped).  *arrived: the gap-free prefix in, also on failure.  */
  int (*recv) (pocl_remote_bulk *b, pocl_remote_link *link, uint32_t mark,
               void *dst, uint64_t n, const pocl_remote_bulk_io *io,
               uint64_t *arrived);
  /* Makes [p, p + n) a place payloads may leave from and land in without a
     copy: 0, or -1 (then they are copied).  Registered once, kept until
     unregister_memory.  */
  int (*register_memory) (pocl_remote_bulk *b, void *p, uint64_t n);
  void (*unregister_memory) (pocl_remote_bulk *b, void *p);
  /* With the connection's links: breaks what the transport has of its own
     (a send or receive blocked in it fails), from any thread; and, once no
     thread uses it, closes that (a resume opens it anew).  */
  void (*shutdown) (pocl_remote_bulk *b);
  void (*close) (pocl_remote_bulk *b);
} pocl_remote_bulk_ops;

struct pocl_remote_bulk
{
  const pocl_remote_bulk_ops *ops;
  void *state; /* lanes: its pocl_remote_lanes */
};

extern const pocl_remote_bulk_ops pocl_remote_inline_bulk_ops;
extern const pocl_remote_bulk_ops pocl_remote_lanes_bulk_ops;

/* The stream transports' registration: nothing to do.  */
int pocl_remote_no_registration (pocl_remote_bulk *b, void *p, uint64_t n);
void pocl_remote_no_unregistration (pocl_remote_bulk *b, void *p);
/* Reads and drops n bytes of the link (through io->recv0 if set): 0 or
   -1.  */
int pocl_remote_bulk_skip (pocl_remote_link *link,
                           const pocl_remote_bulk_io *io, uint64_t n);
/* Receives n bytes of the link (io->recv0 or recv_full) into dst (NULL:
   dropped), in the pieces io->grown hears of (pocl_remote_bulk_tells):
   POCL_REMOTE_BULK_OK or _BROKEN, *arrived as recv's.  */
int pocl_remote_inline_recv (pocl_remote_link *link, void *dst, uint64_t n,
                             const pocl_remote_bulk_io *io, uint64_t *arrived);

/* The lanes of one connection (pocl_remote_bulk_lanes.c).  */
typedef struct pocl_remote_lanes
{
  pthread_mutex_t mu; /* attaching and taking copies: no I/O under it */
  pthread_cond_t cv;  /* a lane attached, or the lanes were shut down */
  /* lane k at [k - 1] while bit k - 1 of `attached` is set */
  pocl_remote_link lane[POCL_REMOTE_MAX_LANES];
  unsigned attached;
  /* pocl_remote_lanes_up (atomic: mark reads it) */
  unsigned up;
  /* shut down: no lane attaches until close, no receive waits */
  int dead;
  int closed; /* for good: never again */
  /* A failed lane shuts down the lanes only, and the link goes on to the
     end of its stripes, so that it survives (peer links); otherwise every
     stream is shut down.  */
  int keep_link;
  /* How long a receive waits for lanes that its sender used and that are
     not attached here yet (ms).  */
  int wait_ms;
  /* A lane in its handshake, shut down with the others (client).  */
  pocl_remote_link opening;
} pocl_remote_lanes;

/* A bulk transport of lanes over ln.  */
void pocl_remote_lanes_init (pocl_remote_lanes *ln, int keep_link,
                             int wait_ms);
static inline void
pocl_remote_lanes_bulk (pocl_remote_bulk *b, pocl_remote_lanes *ln)
{
  b->ops = &pocl_remote_lanes_bulk_ops;
  b->state = ln;
}
/* Lane k (1..POCL_REMOTE_MAX_LANES) takes the link l: 0, or -1 when taken
   or the lanes are shut down (l stays the caller's).  */
int pocl_remote_lanes_attach (pocl_remote_lanes *ln, unsigned k,
                              const pocl_remote_link *l);
/* Whether lane k may attach now (a check before its HELLO_REPLY).  */
int pocl_remote_lanes_free (pocl_remote_lanes *ln, unsigned k);
/* The lanes a payload may go over now: those attached from lane 1 on
   without a gap, none once shut down.  */
unsigned pocl_remote_lanes_up (pocl_remote_lanes *ln);
/* Shuts every lane down (their I/O fails, blocked or not), and makes
   receives stop waiting for lanes; none attaches until close.  Any thread;
   closes nothing.  */
void pocl_remote_lanes_shutdown (pocl_remote_lanes *ln);
/* Closes the lanes once no thread uses them (ends their connection);
   `forever`: no lane attaches again.  */
void pocl_remote_lanes_close (pocl_remote_lanes *ln, int forever);

/* UCX (pocl_remote_bulk_ucx.c, where POCL_REMOTE_HAVE_UCX): a payload of
   POCL_REMOTE_UCX_MIN bytes or more goes as UCX messages of
   POCL_REMOTE_UCX_PIECE bytes between the two ends' UCX workers (RDMA,
   shared memory, TCP: UCX picks), the others through `inner` (lanes or
   inline).  The ends swap their workers' addresses and the secrets that tag
   their messages in UCX_HELLO on the link (pocl_remote_ucx_hello): this end
   receives over UCX once it has offered (ucx_bulk_offer), and sends over it
   once the other's offer came (ucx_bulk_accept).  A UCX message that fails
   or does not come in time makes the transport fall back to `inner` for
   good: recv reports PARTIAL (nothing of the payload was on the link), and
   the receiver asks for the bytes again on the link (PEER_ACK; a client's
   connection resumes instead, and replays inline).  So does a shutdown of
   the transport: a client's connection that resumed stays on inner.  */
#define POCL_REMOTE_UCX_MIN (1u << 20)
#define POCL_REMOTE_UCX_PIECE (4u << 20)
/* A piece that makes no progress for this long fails the payload.  */
#define POCL_REMOTE_UCX_TIMEOUT_MS 10000
struct pocl_remote_ucx;
struct pocl_remote_ucx_ep;
typedef struct pocl_remote_ucx_bulk
{
  pocl_remote_bulk inner;
  struct pocl_remote_ucx *engine; /* set by offer */
  struct pocl_remote_ucx_ep *ep;  /* set by accept (atomic) */
  uint64_t rx_secret, tx_secret;
  /* The messages' sequence numbers: sends come in the link's order under
     the link's send lock, receives on its one reader.  */
  uint64_t tx_seq, rx_seq;
  int failed; /* atomic: inner from now on */
  char *sink; /* a piece's room for a payload nobody wants */
} pocl_remote_ucx_bulk;

/* A UCX transport over inner, not offered yet (it is inner until then).  */
void pocl_remote_ucx_bulk_init (pocl_remote_bulk *b, pocl_remote_ucx_bulk *u,
                                pocl_remote_bulk inner);
/* This end's UCX_HELLO offer: 0 and the body and the address to send
   (free *addr with pocl_remote_ucx_bulk_free_address), or -1 (no UCX:
   decline).  Before anything could come over UCX.  */
int pocl_remote_ucx_bulk_offer (pocl_remote_ucx_bulk *u,
                                pocl_remote_ucx_hello *hello, void **addr,
                                size_t *len);
void pocl_remote_ucx_bulk_free_address (pocl_remote_ucx_bulk *u, void *addr);
/* The other end's offer (after this end's own): 0, or -1 (refused: stays
   on inner).  */
int pocl_remote_ucx_bulk_accept (pocl_remote_ucx_bulk *u,
                                 const pocl_remote_ucx_hello *hello,
                                 const void *addr, size_t len);
/* Whether payloads leave over UCX now.  */
int pocl_remote_ucx_bulk_sending (const pocl_remote_ucx_bulk *u);

#ifdef __cplusplus
}
#endif

#endif
