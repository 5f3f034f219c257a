/* pocl_remote_bulk_lanes.c - the lanes bulk transport (pocl_remote_bulk.h,
   pocl_remote_lanes.h): a large payload in stripes over its message's link
   (stream 0) and the connection's lanes, one thread per lane (kept from
   one payload to the next: pocl_remote_workers.c), so that each stream's
   copies have a core of their own: one TCP stream moves about 3.5
   GB/s from and to memory on the H200 host, four about 10
   (doc/benchmarks.md).  Part of the protocol library;
   who opens the lanes is each side's (client_lanes.c, pocld's
   peer_lanes.cc and child.cc).  */

#include "pocl_remote_bulk.h"
#include "pocl_remote_workers.h"

#include <string.h>
#include <time.h>

void
pocl_remote_lanes_init (pocl_remote_lanes *ln, int keep_link, int wait_ms)
{
  unsigned k;
  memset (ln, 0, sizeof (*ln));
  pthread_mutex_init (&ln->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&ln->cv, &ca);
  pthread_condattr_destroy (&ca);
  for (k = 0; k < POCL_REMOTE_MAX_LANES; ++k)
    pocl_remote_link_clear (&ln->lane[k]);
  pocl_remote_link_clear (&ln->opening);
  ln->keep_link = keep_link;
  ln->wait_ms = wait_ms;
}

/* Under ln->mu.  Shut down lanes are not up: payloads go on the link.  */
static void
count_up (pocl_remote_lanes *ln)
{
  unsigned n = 0;
  while (!ln->dead && n < POCL_REMOTE_MAX_LANES && (ln->attached >> n & 1))
    ++n;
  __atomic_store_n (&ln->up, n, __ATOMIC_RELEASE);
}

int
pocl_remote_lanes_attach (pocl_remote_lanes *ln, unsigned k,
                          const pocl_remote_link *l)
{
  int r = -1;
  pthread_mutex_lock (&ln->mu);
  if (k >= 1 && k <= POCL_REMOTE_MAX_LANES && !ln->dead && !ln->closed
      && !(ln->attached >> (k - 1) & 1))
    {
      ln->lane[k - 1] = *l;
      ln->attached |= 1u << (k - 1);
      count_up (ln);
      pthread_cond_broadcast (&ln->cv);
      r = 0;
    }
  pthread_mutex_unlock (&ln->mu);
  return r;
}

int
pocl_remote_lanes_free (pocl_remote_lanes *ln, unsigned k)
{
  pthread_mutex_lock (&ln->mu);
  int r = k >= 1 && k <= POCL_REMOTE_MAX_LANES && !ln->dead && !ln->closed
          && !(ln->attached >> (k - 1) & 1);
  pthread_mutex_unlock (&ln->mu);
  return r;
}

unsigned
pocl_remote_lanes_up (pocl_remote_lanes *ln)
{
  return __atomic_load_n (&ln->up, __ATOMIC_ACQUIRE);
}

void
pocl_remote_lanes_shutdown (pocl_remote_lanes *ln)
{
  unsigned k;
  pthread_mutex_lock (&ln->mu);
  ln->dead = 1;
  count_up (ln);
  for (k = 0; k < POCL_REMOTE_MAX_LANES; ++k)
    if (ln->attached >> k & 1)
      pocl_remote_link_shutdown (&ln->lane[k]);
  pocl_remote_link_shutdown (&ln->opening);
  pthread_cond_broadcast (&ln->cv);
  pthread_mutex_unlock (&ln->mu);
}

void
pocl_remote_lanes_close (pocl_remote_lanes *ln, int forever)
{
  unsigned k;
  pthread_mutex_lock (&ln->mu);
  for (k = 0; k < POCL_REMOTE_MAX_LANES; ++k)
    if (ln->attached >> k & 1)
      pocl_remote_link_close (&ln->lane[k]);
  ln->attached = 0;
  ln->dead = 0;
  ln->closed |= forever;
  count_up (ln);
  pthread_mutex_unlock (&ln->mu);
}

/* One payload's move over `count` streams: stripe i on stream
   i % count.  */
typedef struct stripe_run
{
  pocl_remote_link streams[POCL_REMOTE_MAX_LANES + 1];
  unsigned count;
  int send, keep_link;
  char *base; /* receiving: NULL drops the bytes */
  uint64_t n;
  const pocl_remote_bulk_io *io;
  const pocl_remote_bulk_src *src; /* sending: when the bytes are ready */
  pthread_mutex_t mu;                          /* what follows */
  pthread_cond_t done;                         /* helpers reached 0 */
  unsigned helpers;                            /* workers not done */
  uint32_t failed;                             /* bit k: stream k failed */
  uint64_t stripes[POCL_REMOTE_MAX_LANES + 1]; /* received, per stream */
  uint64_t given;                              /* what io->grown was told */
} stripe_run;

typedef struct stripe_job
{
  stripe_run *run;
  unsigned k;
} stripe_job;

/* The gap-free prefix, given the stripes in per stream.  Under run->mu.  */
static uint64_t
prefix_of (const stripe_run *run)
{
  /* Stream k's first missing stripe is stripe k + stripes[k] * count.  */
  uint64_t first = run->stripes[0] * run->count;
  unsigned k;
  for (k = 1; k < run->count; ++k)
    {
      uint64_t f = k + run->stripes[k] * run->count;
      if (f < first)
        first = f;
    }
  first *= POCL_REMOTE_STRIPE;
  return first < run->n ? first : run->n;
}

static void
stripe_in (stripe_run *run, unsigned k)
{
  const pocl_remote_bulk_io *io = run->io;
  pthread_mutex_lock (&run->mu);
  ++run->stripes[k];
  if (io != NULL && io->grown != NULL)
    {
      uint64_t to = prefix_of (run);
      if (pocl_remote_bulk_tells (io, run->given, to, run->n))
        {
          io->grown (io->grown_arg, run->given, to);
          run->given = to;
        }
    }
  pthread_mutex_unlock (&run->mu);
}

static int
move_stripes (stripe_run *run, unsigned k)
{
  pocl_remote_link *l = &run->streams[k];
  uint64_t off;
  if (!pocl_remote_link_up (l))
    return -1; /* a lane that never came, or went */
  for (off = (uint64_t)k * POCL_REMOTE_STRIPE; off < run->n;
       off += (uint64_t)run->count * POCL_REMOTE_STRIPE)
    {
      uint64_t len = run->n - off < POCL_REMOTE_STRIPE ? run->n - off
                                                       : POCL_REMOTE_STRIPE;
      int r;
      if (run->send)
        {
          struct iovec iov = { run->base + off, (size_t)len };
          if (run->src != NULL)
            run->src->ready (run->src->arg, off + len);
          r = pocl_remote_link_send (l, &iov, 1);
        }
      else if (k == 0)
        r = run->base == NULL ? pocl_remote_bulk_skip (l, run->io, len)
            : run->io != NULL && run->io->recv0 != NULL
                ? run->io->recv0 (run->io->recv0_arg, run->base + off, len)
                : pocl_remote_link_recv_full (l, run->base + off, len);
      else
        r = run->base == NULL
                ? pocl_remote_link_discard (l, len)
                : pocl_remote_link_recv_full (l, run->base + off, len);
      if (r)
        return -1;
      if (!run->send)
        stripe_in (run, k);
    }
  return 0;
}

/* A stream that fails first shuts the others down, which would wait on the
   peer otherwise (with keep_link, a lane only the lanes).  */
static void
stream_job (stripe_job *j)
{
  stripe_run *run = j->run;
  if (move_stripes (run, j->k) == 0)
    return;
  pthread_mutex_lock (&run->mu);
  uint32_t before = run->failed;
  run->failed |= 1u << j->k;
  pthread_mutex_unlock (&run->mu);
  if (before == 0)
    {
      unsigned k;
      for (k = run->keep_link && j->k != 0 ? 1 : 0; k < run->count; ++k)
        pocl_remote_link_shutdown (&run->streams[k]);
    }
}

/* A worker's job: the run is the caller's, on its stack, until the last
   helper said it is done.  */
static void
worker_job (void *p)
{
  stripe_job *j = (stripe_job *)p;
  stripe_run *run = j->run;
  stream_job (j);
  pthread_mutex_lock (&run->mu);
  if (--run->helpers == 0)
    pthread_cond_signal (&run->done);
  pthread_mutex_unlock (&run->mu);
}

/* One thread per lane; the caller takes stream 0, and any stream that
   cannot have a thread after it (the peer's streams are independent, so
   that only delays it).  */
static int
run_stripes (stripe_run *run, uint64_t *arrived)
{
  stripe_job jobs[POCL_REMOTE_MAX_LANES + 1];
  int given[POCL_REMOTE_MAX_LANES + 1];
  unsigned k;
  pthread_mutex_init (&run->mu, NULL);
  pthread_cond_init (&run->done, NULL);
  /* No worker has a job yet: one that cannot be given is taken off.  */
  run->helpers = run->count - 1;
  run->failed = 0;
  run->given = 0;
  memset (run->stripes, 0, sizeof (run->stripes));
  for (k = 0; k < run->count; ++k)
    {
      jobs[k].run = run;
      jobs[k].k = k;
    }
  for (k = 1; k < run->count; ++k)
    {
      given[k] = pocl_remote_worker_run (worker_job, &jobs[k]) == 0;
      if (!given[k])
        {
          pthread_mutex_lock (&run->mu);
          --run->helpers;
          pthread_mutex_unlock (&run->mu);
        }
    }
  stream_job (&jobs[0]);
  for (k = 1; k < run->count; ++k)
    if (!given[k])
      stream_job (&jobs[k]);
  pthread_mutex_lock (&run->mu);
  while (run->helpers > 0)
    pthread_cond_wait (&run->done, &run->mu);
  pthread_mutex_unlock (&run->mu);
  pthread_cond_destroy (&run->done);
  pthread_mutex_destroy (&run->mu);
  if (arrived != NULL)
    *arrived = run->send ? 0 : prefix_of (run);
  if (run->failed == 0)
    return POCL_REMOTE_BULK_OK;
  return run->keep_link && !(run->failed & 1) ? POCL_REMOTE_BULK_PARTIAL
                                              : POCL_REMOTE_BULK_BROKEN;
}

/* Copies of lanes 1..count - 1 into run->streams (an absent one: no
   connection), under ln->mu.  */
static void
take_lanes (pocl_remote_lanes *ln, stripe_run *run)
{
  unsigned k;
  for (k = 1; k < run->count; ++k)
    {
      if (ln->attached >> (k - 1) & 1)
        run->streams[k] = ln->lane[k - 1];
      else
        pocl_remote_link_clear (&run->streams[k]);
    }
}

/* Lanes go up to a payload of POCL_REMOTE_STRIPE_MIN: below it handing the
   stripes to their threads costs more than they bring.  */
static uint32_t
lanes_mark (pocl_remote_bulk *b, uint64_t n)
{
  unsigned up = n >= POCL_REMOTE_STRIPE_MIN
                    ? pocl_remote_lanes_up ((pocl_remote_lanes *)b->state)
                    : 0;
  return POCL_RMSG_LANES (up);
}

static int
lanes_send (pocl_remote_bulk *b, pocl_remote_link *link, uint32_t mark,
            const void *p, uint64_t n, const pocl_remote_bulk_src *src)
{
  pocl_remote_lanes *ln = (pocl_remote_lanes *)b->state;
  stripe_run run;
  run.count = POCL_RMSG_LANE_COUNT (mark) + 1;
  if (run.count == 1)
    return pocl_remote_inline_bulk_ops.send (b, link, mark, p, n, src);
  run.streams[0] = *link;
  pthread_mutex_lock (&ln->mu);
  take_lanes (ln, &run);
  run.keep_link = ln->keep_link;
  pthread_mutex_unlock (&ln->mu);
  run.send = 1;
  run.base = (char *)p;
  run.n = n;
  run.io = NULL;
  run.src = src;
  return run_stripes (&run, NULL);
}

static int
lanes_recv (pocl_remote_bulk *b, pocl_remote_link *link, uint32_t mark,
            void *dst, uint64_t n, const pocl_remote_bulk_io *io,
            uint64_t *arrived)
{
  pocl_remote_lanes *ln = (pocl_remote_lanes *)b->state;
  unsigned lanes = POCL_RMSG_LANE_COUNT (mark);
  if (lanes == 0)
    return pocl_remote_inline_recv (link, dst, n, io, arrived);
  *arrived = 0;
  if (lanes > POCL_REMOTE_MAX_LANES)
    return POCL_REMOTE_BULK_REFUSED;
  stripe_run run;
  run.count = lanes + 1;
  uint32_t want = (1u << lanes) - 1;
  /* The sender stripes over a lane once it has answered its HELLO, which
     may be before this side has published it.  */
  struct timespec until;
  clock_gettime (CLOCK_MONOTONIC, &until);
  until.tv_sec += ln->wait_ms / 1000;
  until.tv_nsec += (long)(ln->wait_ms % 1000) * 1000000;
  if (until.tv_nsec >= 1000000000)
    {
      ++until.tv_sec;
      until.tv_nsec -= 1000000000;
    }
  int timed_out = 0;
  pthread_mutex_lock (&ln->mu);
  while ((ln->attached & want) != want && !ln->dead && !timed_out)
    timed_out = ln->wait_ms <= 0
                || pthread_cond_timedwait (&ln->cv, &ln->mu, &until) != 0;
  /* Shut down: the lanes' streams fail, as they would under the message.  */
  int missing = (ln->attached & want) != want && !ln->dead;
  take_lanes (ln, &run);
  run.keep_link = ln->keep_link;
  pthread_mutex_unlock (&ln->mu);
  if (missing)
    return POCL_REMOTE_BULK_REFUSED;
  run.streams[0] = *link;
  run.send = 0;
  run.base = (char *)dst;
  run.n = n;
  run.io = io;
  run.src = NULL;
  return run_stripes (&run, arrived);
}

static void
lanes_shutdown (pocl_remote_bulk *b)
{
  pocl_remote_lanes_shutdown ((pocl_remote_lanes *)b->state);
}

static void
lanes_close (pocl_remote_bulk *b)
{
  pocl_remote_lanes_close ((pocl_remote_lanes *)b->state, 0);
}

const pocl_remote_bulk_ops pocl_remote_lanes_bulk_ops = {
  "lanes",
  lanes_mark,
  lanes_send,
  lanes_recv,
  pocl_remote_no_registration,
  pocl_remote_no_unregistration,
  lanes_shutdown,
  lanes_close,
};
