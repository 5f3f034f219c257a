/* pocl_remote_bulk_ucx.c - the UCX bulk transport (pocl_remote_bulk.h):
   large payloads as UCX messages between the two ends' workers
   (pocl_remote_ucx.h), the rest through the transport underneath.
   Compiled where UCX was found: pocld's peer links use it, and client
   data links that ask for it (client_ucx.c).  */

#include "pocl_remote_bulk.h"
#include "pocl_remote_ucx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static pocl_remote_ucx_bulk *
ucx_of (pocl_remote_bulk *b)
{
  return (pocl_remote_ucx_bulk *)b->state;
}

static int
failed (const pocl_remote_ucx_bulk *u)
{
  return __atomic_load_n (&u->failed, __ATOMIC_ACQUIRE);
}

static void
fail (pocl_remote_ucx_bulk *u)
{
  __atomic_store_n (&u->failed, 1, __ATOMIC_RELEASE);
}

int
pocl_remote_ucx_bulk_sending (const pocl_remote_ucx_bulk *u)
{
  return __atomic_load_n (&u->ep, __ATOMIC_ACQUIRE) != NULL && !failed (u);
}

static uint32_t
ucx_mark (pocl_remote_bulk *b, uint64_t n)
{
  pocl_remote_ucx_bulk *u = ucx_of (b);
  if (n >= POCL_REMOTE_UCX_MIN && pocl_remote_ucx_bulk_sending (u))
    return POCL_RMSG_UCX;
  return u->inner.ops->mark (&u->inner, n);
}

static int
ucx_send (pocl_remote_bulk *b, pocl_remote_link *link, uint32_t mark,
          const void *p, uint64_t n, const pocl_remote_bulk_src *src)
{
  pocl_remote_ucx_bulk *u = ucx_of (b);
  if (mark != POCL_RMSG_UCX)
    return u->inner.ops->send (&u->inner, link, mark, p, n, src);
  /* Its pieces are posted together: all of the bytes first.  */
  if (src != NULL)
    src->ready (src->arg, n);
  uint64_t seq = u->tx_seq;
  u->tx_seq += pocl_remote_ucx_pieces (n, POCL_REMOTE_UCX_PIECE);
  if (pocl_remote_ucx_send_pieces (u->ep, u->tx_secret, seq, p, n,
                                   POCL_REMOTE_UCX_PIECE,
                                   POCL_REMOTE_UCX_TIMEOUT_MS, &u->failed)
      == 0)
    return POCL_REMOTE_BULK_OK;
  /* The header went whole on the link: it is in step, and the receiver
     asks for what did not come.  */
  fail (u);
  return POCL_REMOTE_BULK_PARTIAL;
}

typedef struct
{
  const pocl_remote_bulk_io *io;
  uint64_t told, n;
} grown_relay;

/* Pieces come in order: the prefix grows by one each time; the listener
   hears of it by its step.  */
static void
relay (void *arg, uint64_t from, uint64_t to)
{
  grown_relay *g = (grown_relay *)arg;
  (void)from;
  if (pocl_remote_bulk_tells (g->io, g->told, to, g->n))
    {
      g->io->grown (g->io->grown_arg, g->told, to);
      g->told = to;
    }
}

static int
ucx_recv (pocl_remote_bulk *b, pocl_remote_link *link, uint32_t mark,
          void *dst, uint64_t n, const pocl_remote_bulk_io *io,
          uint64_t *arrived)
{
  pocl_remote_ucx_bulk *u = ucx_of (b);
  *arrived = 0;
  if (mark != POCL_RMSG_UCX)
    return u->inner.ops->recv (&u->inner, link, mark, dst, n, io, arrived);
  /* Only once this end has offered UCX may the other send over it.  */
  if (u->engine == NULL)
    return POCL_REMOTE_BULK_REFUSED;
  uint64_t seq = u->rx_seq;
  u->rx_seq += pocl_remote_ucx_pieces (n, POCL_REMOTE_UCX_PIECE);
  int r = 0;
  if (dst == NULL)
    {
      /* Taken piece by piece into a sink: nobody wants the bytes.  */
      if (u->sink == NULL && (u->sink = malloc (POCL_REMOTE_UCX_PIECE)) == NULL)
        r = -1;
      for (uint64_t off = 0, k = 0; r == 0 && (off < n || k == 0);
           off += POCL_REMOTE_UCX_PIECE, ++k)
        {
          uint64_t len = n - off < POCL_REMOTE_UCX_PIECE
                             ? n - off
                             : POCL_REMOTE_UCX_PIECE;
          size_t got;
          r = pocl_remote_ucx_recv (u->engine,
                                    pocl_remote_ucx_tag (u->rx_secret, seq + k,
                                                         0),
                                    u->sink, len, &got,
                                    POCL_REMOTE_UCX_TIMEOUT_MS);
          if (r == 0 && got != len)
            r = -1;
        }
      *arrived = r == 0 ? n : 0;
    }
  else
    {
      grown_relay g = { io, 0, n };
      int tell = io != NULL && io->grown != NULL && io->step > 0;
      r = pocl_remote_ucx_recv_pieces (
          u->engine, u->rx_secret, seq, dst, n, POCL_REMOTE_UCX_PIECE,
          POCL_REMOTE_UCX_TIMEOUT_MS, &u->failed, tell ? relay : NULL, &g,
          arrived);
      if (tell && *arrived > g.told)
        io->grown (io->grown_arg, g.told, *arrived);
    }
  if (r == 0)
    return POCL_REMOTE_BULK_OK;
  fail (u);
  return POCL_REMOTE_BULK_PARTIAL;
}

static int
ucx_register (pocl_remote_bulk *b, void *p, uint64_t n)
{
  pocl_remote_ucx_bulk *u = ucx_of (b);
  return u->engine != NULL ? pocl_remote_ucx_register (u->engine, p, n) : -1;
}

static void
ucx_unregister (pocl_remote_bulk *b, void *p)
{
  pocl_remote_ucx_bulk *u = ucx_of (b);
  if (u->engine != NULL)
    pocl_remote_ucx_unregister (u->engine, p);
}

/* A sender or receiver waiting in UCX gives up (its wait watches the
   flag); the link goes on with inner.  */
static void
ucx_shutdown (pocl_remote_bulk *b)
{
  pocl_remote_ucx_bulk *u = ucx_of (b);
  fail (u);
  u->inner.ops->shutdown (&u->inner);
}

static void
ucx_close (pocl_remote_bulk *b)
{
  pocl_remote_ucx_bulk *u = ucx_of (b);
  pocl_remote_ucx_ep *ep
      = __atomic_exchange_n (&u->ep, NULL, __ATOMIC_ACQ_REL);
  pocl_remote_ucx_disconnect (ep);
  free (u->sink);
  u->sink = NULL;
  u->inner.ops->close (&u->inner);
}

static const pocl_remote_bulk_ops pocl_remote_ucx_bulk_ops = {
  "ucx",          ucx_mark,       ucx_send,     ucx_recv, ucx_register,
  ucx_unregister, ucx_shutdown,   ucx_close,
};

void
pocl_remote_ucx_bulk_init (pocl_remote_bulk *b, pocl_remote_ucx_bulk *u,
                           pocl_remote_bulk inner)
{
  memset (u, 0, sizeof (*u));
  u->inner = inner;
  b->ops = &pocl_remote_ucx_bulk_ops;
  b->state = u;
}

static void
logged (const char *m)
{
  fprintf (stderr, "pocl-remote %s\n", m);
}

int
pocl_remote_ucx_bulk_offer (pocl_remote_ucx_bulk *u,
                            pocl_remote_ucx_hello *hello, void **addr,
                            size_t *len)
{
  pocl_remote_ucx *e = pocl_remote_ucx_engine (logged);
  memset (hello, 0, sizeof (*hello));
  if (e == NULL || failed (u)
      || getrandom (&u->rx_secret, sizeof (u->rx_secret), 0)
             != sizeof (u->rx_secret)
      || pocl_remote_ucx_address (e, addr, len) != 0)
    return -1;
  if (*len > POCL_REMOTE_MAX_UCX_ADDRESS)
    {
      pocl_remote_ucx_free_address (e, *addr);
      return -1;
    }
  u->engine = e;
  hello->flags = POCL_REMOTE_UCX_OFFER;
  hello->secret = u->rx_secret;
  return 0;
}

void
pocl_remote_ucx_bulk_free_address (pocl_remote_ucx_bulk *u, void *addr)
{
  pocl_remote_ucx_free_address (u->engine, addr);
}

int
pocl_remote_ucx_bulk_accept (pocl_remote_ucx_bulk *u,
                             const pocl_remote_ucx_hello *hello,
                             const void *addr, size_t len)
{
  if (u->engine == NULL || failed (u) || !(hello->flags & POCL_REMOTE_UCX_OFFER)
      || len == 0 || len > POCL_REMOTE_MAX_UCX_ADDRESS
      || __atomic_load_n (&u->ep, __ATOMIC_ACQUIRE) != NULL)
    return -1;
  pocl_remote_ucx_ep *ep
      = pocl_remote_ucx_connect (u->engine, addr, len, &u->failed);
  if (ep == NULL)
    return -1;
  u->tx_secret = hello->secret;
  __atomic_store_n (&u->ep, ep, __ATOMIC_RELEASE);
  return 0;
}
