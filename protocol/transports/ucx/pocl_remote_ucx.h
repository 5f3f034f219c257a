/* pocl_remote_ucx.h - bulk payloads over UCX (doc/protocol.md,
   "Transports"), in C for pocld's peer links and for client data links
   that ask for it (POCL_REMOTE_UCX).  Built
   where pkg-config finds UCX (POCL_REMOTE_HAVE_UCX): Debian's libucx-dev.

   UCX moves a payload between two processes over the best transport they
   share: InfiniBand or RoCE through libibverbs (zero-copy RDMA), shared
   memory between processes of one host (posix, cma), or TCP.  The
   processes' UCX workers know each other by the worker addresses that
   they exchange over their PoCL-R link, which is authenticated (pre-shared
   key, TLS) before anything else crosses it; every payload then goes as a
   tagged message whose tag mixes a random 64-bit secret sent over that
   link with the message's id and offset (pocl_remote_ucx_tag), so that a
   process that did not see the link can match no receive.  The bytes
   themselves are not encrypted.

   One engine per process (a context and one worker, which several threads
   share); sends and receives are blocking calls that progress the worker
   until their request completes, fails or times out.  */

#ifndef POCL_REMOTE_UCX_H
#define POCL_REMOTE_UCX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pocl_remote_ucx pocl_remote_ucx;
typedef struct pocl_remote_ucx_ep pocl_remote_ucx_ep;

/* Loads UCX (libucp.so.0) into this process, once: 0, or -1 (logged
   through `log`).  Loading patches glibc's memory functions process-wide
   (pocl_remote_ucx.c says why it is not linked), best done while one
   thread runs, and setting variables in the environment: pocld loads it
   before it forks sessions where its policy may use UCX, the client as its
   devices are set up.  The engine loads it itself otherwise.  */
int pocl_remote_ucx_load (void (*log) (const char *msg));

/* The engine of this process, made on first use; NULL (logged through
   `log` once) if UCX is not built in, not installed or cannot start.
   Thread-safe.  */
pocl_remote_ucx *pocl_remote_ucx_engine (void (*log) (const char *msg));

/* This engine's worker address, for the other end's pocl_remote_ucx_connect:
   0 and *addr (free with pocl_remote_ucx_free_address), or -1.  */
int pocl_remote_ucx_address (pocl_remote_ucx *u, void **addr, size_t *len);
void pocl_remote_ucx_free_address (pocl_remote_ucx *u, void *addr);

/* An endpoint to the worker at `addr` (from the other end), or NULL.
   When the transport reports the peer gone, *failed (if not NULL) is set
   too: a receive from that peer waiting on it as its abort flag ends.  */
pocl_remote_ucx_ep *pocl_remote_ucx_connect (pocl_remote_ucx *u,
                                             const void *addr, size_t len,
                                             int *failed);
/* Whether the endpoint failed (its peer went away, the transport broke):
   later sends on it fail at once.  */
int pocl_remote_ucx_ep_failed (const pocl_remote_ucx_ep *ep);
/* Closes the endpoint, ending what is still in flight on it.  */
void pocl_remote_ucx_disconnect (pocl_remote_ucx_ep *ep);

/* A payload's tag: the link's secret, the message's id and its offset in
   the payload of that id.  */
static inline uint64_t
pocl_remote_ucx_tag (uint64_t secret, uint64_t id, uint64_t offset)
{
  uint64_t x = secret ^ (id * 0x9E3779B97F4A7C15ull) ^ (offset + 1);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

/* Sends n bytes at p under `tag`, blocking until they left (the buffer
   may be reused then) or timeout_ms passed without that (-1: none): 0, or
   -1 (the endpoint failed, or the time ran out: the send was ended).  */
int pocl_remote_ucx_send (pocl_remote_ucx_ep *ep, uint64_t tag,
                          const void *p, size_t n, int timeout_ms);
/* Receives the message of `tag` (of at most n bytes) into p, blocking as
   the send: 0 and *got, or -1 (none came in time, or it was larger).  */
int pocl_remote_ucx_recv (pocl_remote_ucx *u, uint64_t tag, void *p,
                          size_t n, size_t *got, int timeout_ms);

/* A payload of n bytes as messages of `piece` bytes (the last shorter),
 tagged pocl_remote_ucx_tag (secret, seq + k, 0) for piece k, up to 32 in
 flight at once, so that the network and the receiver's use of the first
 pieces overlap.  A piece that makes no progress for timeout_ms, or
 *abort set (by another thread), ends them all.  send_pieces: 0, or -1
 (what was left is ended: the endpoint is closed under it).  recv_pieces:
 receives them in order into p, telling grown (if not NULL) of the
 gap-free prefix as it grows; *arrived: that prefix, also on failure
 (-1).  pocl_remote_ucx_pieces: how many seq numbers a payload takes.  */
static inline uint64_t
pocl_remote_ucx_pieces (uint64_t n, uint64_t piece)
{
return n == 0 ? 1 : (n + piece - 1) / piece;
}
int pocl_remote_ucx_send_pieces (pocl_remote_ucx_ep *ep, uint64_t secret,
                               uint64_t seq, const void *p, uint64_t n,
                               uint64_t piece, int timeout_ms,
                               const int *abort);
int pocl_remote_ucx_recv_pieces (pocl_remote_ucx *u, uint64_t secret,
                               uint64_t seq, void *p, uint64_t n,
                               uint64_t piece, int timeout_ms,
                               const int *abort,
                               void (*grown) (void *arg, uint64_t from,
                                              uint64_t to),
                               void *arg, uint64_t *arrived);

/* Registers [p, p + n) for transfers, once: memory that moves again and
   again (pocld's pooled staging) is then not registered per transfer.
   0, or -1 (then UCX registers it per transfer itself, in its own
   cache).  pocl_remote_ucx_unregister before the memory is freed.  */
int pocl_remote_ucx_register (pocl_remote_ucx *u, void *p, size_t n);
void pocl_remote_ucx_unregister (pocl_remote_ucx *u, void *p);

#ifdef __cplusplus
}
#endif

#endif
