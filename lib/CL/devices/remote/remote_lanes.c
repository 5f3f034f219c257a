/* remote_lanes.c - the lanes of a connection to pocld
   (pocl_remote_lanes.h): more TCP streams that carry the
   payloads of large DATA, READ_DATA and COMPLETION messages in stripes
   beside the data socket.  One stream moves what the one core copying its
   bytes can, about 3.5 GB/s from and to memory on the H200 host; four
   moved about 10 (doc/benchmarks.md).  */

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "pocl_remote_auth.h"
#include "pocl_runtime_config.h"
#include "remote.h"
#include "remote_tls.h"

unsigned
pocl_remote_lanes_wanted (void)
{
  long cpus = sysconf (_SC_NPROCESSORS_ONLN);
  long n = pocl_get_int_option ("POCL_REMOTE_LANES",
                                (int)(cpus / REMOTE_CPUS_PER_LANE));
  return n < 0                             ? 0
         : n > (long)POCL_REMOTE_MAX_LANES ? POCL_REMOTE_MAX_LANES
                                           : (unsigned)n;
}

/* Connects lane 1, 2, ... in turn, each published as soon as its
   HELLO_REPLY came: pocld may stripe over it from then on.  In a thread of
   its own, counted among the readers (a resume waits for it): a far server
   takes round trips per lane, which connecting should not wait for.  */
static void *
open_lanes (void *p)
{
  remote_server *s = (remote_server *)p;
  unsigned want = pocl_remote_lanes_wanted (), k;
  long timeout_ms
      = pocl_get_int_option ("POCL_REMOTE_CONNECT_TIMEOUT_MS", 5000);
  uint16_t port = (uint16_t)(s->port + POCL_REMOTE_DATA_PORT_OFFSET);
  char key[POCL_REMOTE_MAX_KEY];
  long key_len = pocl_remote_client_key (key);
  for (k = 1; k <= want && key_len >= 0; ++k)
    {
      struct pocl_remote_tls *tls = NULL;
      pocl_remote_hello_reply rep;
      uint64_t t0, t1;
      if (__atomic_load_n (&s->down, __ATOMIC_ACQUIRE) || pocl_remote_dead (s))
        break;
      int fd = pocl_remote_connect (s->host, port, (int)timeout_ms);
      if (fd < 0)
        break;
      __atomic_store_n (&s->lane_opening, fd, __ATOMIC_RELEASE);
      int failed
          = ((pocl_remote_tls_wanted ()
              && (tls = pocl_remote_tls_start (fd, s->host, port,
                                               POCL_REMOTE_ROLE_LANE,
                                               s->session_id, (int)timeout_ms))
                     == NULL)
             || pocl_remote_handshake (s, fd, tls, POCL_REMOTE_ROLE_LANE, k,
                                       s->session_id, NULL, key,
                                       (size_t)key_len, &rep, &t0, &t1)
                    != CL_SUCCESS);
      __atomic_store_n (&s->lane_opening, -1, __ATOMIC_RELEASE);
      if (failed)
        {
          pocl_remote_tls_destroy (tls);
          close (fd);
          break;
        }
      s->lane_fd[k - 1] = fd;
      s->lane_tls[k - 1] = tls;
      __atomic_store_n (&s->lanes, k, __ATOMIC_RELEASE);
    }
  memset (key, 0, sizeof (key));
  if (k <= want)
    POCL_MSG_WARN ("remote: %u of %u lanes to %s:%u\n", k - 1, want, s->host,
                   s->port);
  pocl_remote_reader_done (s);
  return NULL;
}

int
pocl_remote_lanes_reserve (remote_server *s)
{
  if (pocl_remote_lanes_wanted () == 0)
    return 0;
  pocl_remote_count_reader (s);
  return 1;
}

void
pocl_remote_lanes_start (remote_server *s)
{
  pocl_remote_spawn_reader (s, open_lanes, s);
}

void
pocl_remote_shutdown_lanes (remote_server *s)
{
  unsigned k, n = __atomic_load_n (&s->lanes, __ATOMIC_ACQUIRE);
  int opening = __atomic_load_n (&s->lane_opening, __ATOMIC_ACQUIRE);
  for (k = 0; k < n; ++k)
    shutdown (s->lane_fd[k], SHUT_RDWR);
  /* the opener's handshake would hold a resume up for its timeout */
  if (opening >= 0)
    shutdown (opening, SHUT_RDWR);
}

void
pocl_remote_close_lanes (remote_server *s)
{
  unsigned k, n = __atomic_exchange_n (&s->lanes, 0, __ATOMIC_ACQ_REL);
  for (k = 0; k < n; ++k)
    {
      pocl_remote_tls_destroy (s->lane_tls[k]);
      close (s->lane_fd[k]);
    }
}

/* One stream's stripes of a payload.  Stream 0 (the data socket) goes
   through `stream0` when receiving: its reader's buffer may hold the first
   bytes already.  */
typedef struct stripe_job
{
  int fd;
  struct pocl_remote_tls *tls;
  int send;
  char *base;
  uint64_t n;
  unsigned k, count;
  int (*stream0) (void *arg, void *dst, uint64_t n);
  void *arg;
  int failed;
  struct stripe_job *all;
} stripe_job;

static int
move_stripes (stripe_job *j)
{
  uint64_t off;
  for (off = (uint64_t)j->k * POCL_REMOTE_STRIPE; off < j->n;
       off += (uint64_t)j->count * POCL_REMOTE_STRIPE)
    {
      uint64_t len
          = j->n - off < POCL_REMOTE_STRIPE ? j->n - off : POCL_REMOTE_STRIPE;
      struct iovec iov = { j->base + off, len };
      int r = j->send ? pocl_remote_send_iov (j->fd, j->tls, &iov, 1)
              : j->stream0
                  ? j->stream0 (j->arg, j->base + off, len)
                  : pocl_remote_read_full (j->fd, j->tls, j->base + off, len);
      if (r)
        return -1;
    }
  return 0;
}

/* A stream that fails shuts all of them down: the others would wait on
   pocld otherwise.  */
static void *
stripe_thread (void *p)
{
  stripe_job *j = (stripe_job *)p;
  j->failed = move_stripes (j);
  if (j->failed)
    {
      unsigned k;
      for (k = 0; k < j->count; ++k)
        shutdown (j->all[k].fd, SHUT_RDWR);
    }
  return NULL;
}

/* One thread per lane; the caller takes stream 0, and any stream that
   cannot have a thread after it (pocld's streams are independent, so that
   only delays it).  */
static int
run_stripes (remote_server *s, unsigned lanes, int send, char *base,
             uint64_t n, int (*stream0) (void *, void *, uint64_t), void *arg)
{
  stripe_job jobs[POCL_REMOTE_MAX_LANES + 1];
  pthread_t threads[POCL_REMOTE_MAX_LANES + 1];
  int started[POCL_REMOTE_MAX_LANES + 1];
  unsigned k, count = lanes + 1;
  int failed = 0;
  for (k = 0; k < count; ++k)
    {
      stripe_job *j = &jobs[k];
      memset (j, 0, sizeof (*j));
      j->fd = k ? s->lane_fd[k - 1] : s->data_fd;
      j->tls = k ? s->lane_tls[k - 1] : s->data_tls;
      j->send = send;
      j->base = base;
      j->n = n;
      j->k = k;
      j->count = count;
      j->stream0 = k ? NULL : stream0;
      j->arg = arg;
      j->all = jobs;
    }
  for (k = 1; k < count; ++k)
    started[k]
        = pthread_create (&threads[k], NULL, stripe_thread, &jobs[k]) == 0;
  stripe_thread (&jobs[0]);
  for (k = 1; k < count; ++k)
    {
      if (started[k])
        pthread_join (threads[k], NULL);
      else
        stripe_thread (&jobs[k]);
    }
  for (k = 0; k < count; ++k)
    failed |= jobs[k].failed;
  return failed ? -1 : 0;
}

int
pocl_remote_stripes_send (remote_server *s, unsigned lanes, const void *base,
                          uint64_t n)
{
  return run_stripes (s, lanes, 1, (char *)base, n, NULL, NULL);
}

int
pocl_remote_stripes_recv (remote_server *s, unsigned lanes, void *dst,
                          uint64_t n,
                          int (*stream0) (void *, void *, uint64_t), void *arg)
{
  /* pocld uses a lane as soon as it has answered its HELLO; the opener
     publishes it right after reading that answer.  */
  uint64_t waited_us = 0;
  while (__atomic_load_n (&s->lanes, __ATOMIC_ACQUIRE) < lanes)
    {
      if (waited_us >= 10000000 || pocl_remote_dead (s)
          || __atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
        {
          POCL_MSG_ERR ("remote: %s:%u striped a payload over %u lanes, "
                        "which we do not have\n",
                        s->host, s->port, lanes);
          return -1;
        }
      usleep (100);
      waited_us += 100;
    }
  return run_stripes (s, lanes, 0, (char *)dst, n, stream0, arg);
}
