/* test_bulk_pieces.c - the pieces in which the bulk transports
   (protocol/transports/pocl_remote_bulk.h) tell a receiver of a payload's gap-free
   prefix, over real sockets of this process, inline and striped over a
   link and three lanes: pieces follow one another from 0 to the payload's
   end; before its last `step` bytes each is a step or more; in them each
   is POCL_REMOTE_BULK_TAIL or more, or ends the payload (inline: exactly
   4, 4, 1 MiB and the rest for 9.5 MiB and 3 bytes in steps of 4 MiB);
   every byte arrives as sent.  Prints "bulk_pieces: PASS" or the
   failure.  */

#include "pocl_remote_bulk.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define STEP (4u << 20)
#define SIZE ((9u << 20) + (1u << 19) + 3u)
#define LANES 3u
#define MAX_PIECES 64

typedef struct
{
  uint64_t from[MAX_PIECES], to[MAX_PIECES];
  int n;
} pieces;

static void
grown (void *arg, uint64_t from, uint64_t to)
{
  pieces *p = (pieces *)arg;
  if (p->n < MAX_PIECES)
    {
      p->from[p->n] = from;
      p->to[p->n] = to;
    }
  ++p->n;
}

static int
fail (const char *what, const char *how)
{
  printf ("bulk_pieces: FAIL: %s: %s\n", how, what);
  return 1;
}

/* The rule, whatever the order in which the prefix grew.  */
static const char *
check_rule (const pieces *p)
{
  uint64_t at = 0;
  int k;
  if (p->n == 0 || p->n > MAX_PIECES)
    return "no pieces, or too many";
  for (k = 0; k < p->n; ++k)
    {
      uint64_t len = p->to[k] - p->from[k];
      if (p->from[k] != at || p->to[k] <= at)
        return "pieces not one after the other";
      if (p->to[k] != SIZE
          && len < (SIZE - at > STEP ? STEP : POCL_REMOTE_BULK_TAIL))
        return "a piece smaller than its rule";
      at = p->to[k];
    }
  return at == SIZE ? NULL : "the pieces end before the payload";
}

typedef struct
{
  pocl_remote_bulk *b;
  pocl_remote_link *link;
  uint32_t mark;
  const unsigned char *src;
  int rc;
} sender;

static void *
send_all (void *arg)
{
  sender *s = (sender *)arg;
  s->rc = s->b->ops->send (s->b, s->link, s->mark, s->src, SIZE, NULL);
  return NULL;
}

/* One payload from a sender end to a receiver end, told to p.  */
static const char *
move (pocl_remote_bulk *tx, pocl_remote_link *tx_link, pocl_remote_bulk *rx,
      pocl_remote_link *rx_link, uint32_t mark, const unsigned char *src,
      unsigned char *dst, pieces *p)
{
  pocl_remote_bulk_io io;
  memset (&io, 0, sizeof (io));
  io.grown = grown;
  io.grown_arg = p;
  io.step = STEP;
  memset (dst, 0, SIZE);
  memset (p, 0, sizeof (*p));
  sender s = { tx, tx_link, mark, src, -1 };
  pthread_t t;
  if (pthread_create (&t, NULL, send_all, &s))
    return "no sender thread";
  uint64_t arrived = 0;
  int r = rx->ops->recv (rx, rx_link, mark, dst, SIZE, &io, &arrived);
  pthread_join (t, NULL);
  if (r != POCL_REMOTE_BULK_OK || s.rc != POCL_REMOTE_BULK_OK
      || arrived != SIZE)
    return "the payload did not move";
  if (memcmp (src, dst, SIZE))
    return "bytes differ";
  return check_rule (p);
}

static int
pair (pocl_remote_link *a, pocl_remote_link *b)
{
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM, 0, sv))
    return -1;
  pocl_remote_tcp_link (a, sv[0]);
  pocl_remote_tcp_link (b, sv[1]);
  return 0;
}

int
main (void)
{
  unsigned char *src = malloc (SIZE), *dst = malloc (SIZE);
  static pieces p;
  pocl_remote_link tx_link, rx_link;
  uint64_t i;
  for (i = 0; i < SIZE; ++i)
    src[i] = (unsigned char)(i * 7 + i / 4099);
  if (pair (&tx_link, &rx_link))
    return fail ("socketpair", "setup");

  pocl_remote_bulk inl = { &pocl_remote_inline_bulk_ops, NULL };
  const char *e = move (&inl, &tx_link, &inl, &rx_link, 0, src, dst, &p);
  if (e)
    return fail (e, "inline");
  static const uint64_t want[]
      = { STEP, 2 * STEP, 2 * STEP + (1u << 20), SIZE };
  if (p.n != 4)
    return fail ("not 4 pieces", "inline");
  for (i = 0; i < 4; ++i)
    if (p.to[i] != want[i])
      return fail ("pieces other than 4, 4, 1 MiB and the rest", "inline");

  pocl_remote_lanes tx_ln, rx_ln;
  pocl_remote_lanes_init (&tx_ln, 0, 5000);
  pocl_remote_lanes_init (&rx_ln, 0, 5000);
  unsigned k;
  for (k = 1; k <= LANES; ++k)
    {
      pocl_remote_link a, b;
      if (pair (&a, &b) || pocl_remote_lanes_attach (&tx_ln, k, &a)
          || pocl_remote_lanes_attach (&rx_ln, k, &b))
        return fail ("a lane", "setup");
    }
  pocl_remote_bulk tx, rx;
  pocl_remote_lanes_bulk (&tx, &tx_ln);
  pocl_remote_lanes_bulk (&rx, &rx_ln);
  uint32_t mark = tx.ops->mark (&tx, SIZE);
  if (POCL_RMSG_LANE_COUNT (mark) != LANES)
    return fail ("not striped over every lane", "lanes");
  int round;
  for (round = 0; round < 20; ++round)
    if ((e = move (&tx, &tx_link, &rx, &rx_link, mark, src, dst, &p)))
      return fail (e, "lanes");
  pocl_remote_lanes_close (&tx_ln, 1);
  pocl_remote_lanes_close (&rx_ln, 1);
  pocl_remote_link_close (&tx_link);
  pocl_remote_link_close (&rx_link);
  free (src);
  free (dst);
  printf ("bulk_pieces: PASS\n");
  return 0;
}
