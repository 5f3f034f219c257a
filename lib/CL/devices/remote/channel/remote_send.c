/* remote_send.c - a command's way out, in the order it takes: its entry
   in the in-flight table (where its completion finds it), the replay log of
   its link, the coalescing of a burst's kernels, and the write.

   Threads: application threads write their own messages, each whole under
   its link's send lock (no hand-off on the command path); the readers
   (remote_reader.c) take the entries out of the table.  Requests and the
   loss of a session: remote_conn.c.

   The replay log of a link keeps what was sent and not yet acknowledged,
   for a resume (doc/reconnect.md, remote_resume.c).  Senders append to it
   under the send lock, which they hold anyway; the server's ACKs only move
   a counter, and the next sender drops the acknowledged entries.

   Coalescing: the kernels of a burst leave together.

   Where the client and pocld share a few cores, a message per kernel costs
   a sendmsg here and a wake-up and a recv there, and pocld sees one kernel
   at a time, so that each gets a native event and a callback (doc/pocld.md,
   "Commands without a native event").  Hence a kernel enqueued within
   REMOTE_BURST_NS of the link's previous command, while a command sent
   before it is still in flight, stays in the replay log (where every
   message goes anyway), up to POCL_REMOTE_COALESCE of them.  They leave in
   one write with the first message that is not held, or on clFlush,
   clFinish or a wait of the driver (every server's), or when the reader
   completes the last command in flight (nothing else would wake it).  A
   lone command, or the first of a burst, leaves at once.

   A command in flight may wait for the application (a user event), which
   may poll a held kernel without a flush first; the timer thread sends a
   batch held longer than REMOTE_HOLD_NS.  It ticks only while kernels are
   being held.  */

#include <string.h>
#include <time.h>

#include "pocl_debug.h"
#include "pocl_remote_workers.h"
#include "pocl_timing.h"
#include "remote_channel_private.h"
#include "remote_trace.h"

void
pocl_remote_event_insert (remote_server *s, remote_inflight *f)
{
  unsigned b = (unsigned)(f->id & (REMOTE_EVENT_BUCKETS - 1));
  pthread_mutex_lock (&s->table_lock);
  f->hash_next = s->events[b];
  s->events[b] = f;
  __atomic_fetch_add (&s->in_flight, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock (&s->table_lock);
}

remote_inflight *
pocl_remote_event_take (remote_server *s, uint64_t id)
{
  unsigned b = (unsigned)(id & (REMOTE_EVENT_BUCKETS - 1));
  pthread_mutex_lock (&s->table_lock);
  remote_inflight **p = &s->events[b];
  while (*p && (*p)->id != id)
    p = &(*p)->hash_next;
  remote_inflight *re = *p;
  if (re)
    {
      *p = re->hash_next;
      __atomic_fetch_sub (&s->in_flight, 1, __ATOMIC_RELAXED);
    }
  pthread_mutex_unlock (&s->table_lock);
  return re;
}

/* Takes the first entry of bucket b, or NULL: the loss of the session
   empties the table this way.  */
remote_inflight *
pocl_remote_event_pop (remote_server *s, unsigned b)
{
  pthread_mutex_lock (&s->table_lock);
  remote_inflight *re = s->events[b];
  if (re)
    {
      s->events[b] = re->hash_next;
      __atomic_fetch_sub (&s->in_flight, 1, __ATOMIC_RELAXED);
    }
  pthread_mutex_unlock (&s->table_lock);
  return re;
}

#define LOG_INITIAL_ENTRIES 256

static char *
entry_bytes (remote_log_entry *e)
{
  return e->heap ? e->heap : e->inl;
}

static void
entry_free (remote_log_entry *e)
{
  free (e->heap);
  e->heap = NULL;
}

/* Drops the entries the server has handled (count `seen`).  */
void
pocl_remote_log_trim (remote_log *log, uint64_t seen)
{
  while (log->first < log->next && log->first <= seen)
    entry_free (&log->ring[log->first++ & (log->cap - 1)]);
}

static int
log_grow (remote_log *log)
{
  uint64_t cap = log->cap ? log->cap * 2 : LOG_INITIAL_ENTRIES;
  remote_log_entry *ring = malloc (cap * sizeof (remote_log_entry));
  if (ring == NULL)
    return -1;
  uint64_t q;
  for (q = log->first; q < log->next; ++q)
    memcpy (&ring[q & (cap - 1)], &log->ring[q & (log->cap - 1)],
            sizeof (remote_log_entry));
  free (log->ring);
  log->ring = ring;
  log->cap = cap;
  return 0;
}

/* Appends one message (iov[0] the header, iov[1..] body and payload);
   pieces from index `stable_from` on are referenced, the others copied.
   -1 without memory.  */
int
pocl_remote_log_append (remote_log *log, const struct iovec *iov, int n,
                        int stable_from)
{
  if (log->first == 0)
    log->first = log->next = 1;
  if (log->next - log->first == log->cap && log_grow (log))
    return -1;
  remote_log_entry *e = &log->ring[log->next & (log->cap - 1)];
  size_t copied = 0;
  int i;
  for (i = 1; i < stable_from && i < n; ++i)
    copied += iov[i].iov_len;
  e->heap = copied > REMOTE_LOG_INLINE ? malloc (copied) : NULL;
  if (copied > REMOTE_LOG_INLINE && e->heap == NULL)
    return -1;
  memcpy (&e->hdr, iov[0].iov_base, sizeof (e->hdr));
  char *p = entry_bytes (e);
  for (i = 1; i < stable_from && i < n; ++i)
    {
      memcpy (p, iov[i].iov_base, iov[i].iov_len);
      p += iov[i].iov_len;
    }
  e->copied = copied;
  e->nref = 0;
  for (; i < n; ++i)
    e->ref[e->nref++] = iov[i];
  ++log->next;
  return 0;
}

/* The pieces of entry e as sent (at most 8): their count.  */
int
pocl_remote_log_iov (remote_log_entry *e, struct iovec *iov)
{
  int n = 0, i;
  iov[n].iov_base = &e->hdr;
  iov[n++].iov_len = sizeof (e->hdr);
  if (e->copied)
    {
      iov[n].iov_base = entry_bytes (e);
      iov[n++].iov_len = e->copied;
    }
  for (i = 0; i < e->nref; ++i)
    iov[n++] = e->ref[i];
  return n;
}

#define REMOTE_BURST_NS 50000
#define REMOTE_HOLD_NS 2000000

unsigned
pocl_remote_coalesce_max (void)
{
  static int64_t cached = -1;
  return (unsigned)pocl_remote_cpu_option (&cached, "POCL_REMOTE_COALESCE",
                                           REMOTE_COALESCE, 0,
                                           REMOTE_COALESCE_MAX);
}

static pthread_mutex_t timer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_cond = PTHREAD_COND_INITIALIZER;
static pthread_once_t timer_once = PTHREAD_ONCE_INIT;
static int timer_running; /* atomic */
static int timer_idle;    /* timer_lock */
static int held_lately;   /* atomic: a kernel was held since the last tick */
static int holding;       /* atomic: servers with a held batch */

/* Whether some server holds kernels.  */
static int
some_held (void)
{
  return __atomic_load_n (&holding, __ATOMIC_ACQUIRE) != 0;
}

static void *
timer_thread (void *arg)
{
  (void)arg;
  pthread_mutex_lock (&timer_lock);
  for (;;)
    {
      while (!__atomic_load_n (&held_lately, __ATOMIC_ACQUIRE))
        {
          timer_idle = 1;
          pthread_cond_wait (&timer_cond, &timer_lock);
        }
      timer_idle = 0;
      __atomic_store_n (&held_lately, 0, __ATOMIC_RELEASE);
      pthread_mutex_unlock (&timer_lock);
      struct timespec t = { 0, REMOTE_HOLD_NS };
      nanosleep (&t, NULL);
      pocl_remote_flush_all_held (pocl_gettimemono_ns () - REMOTE_HOLD_NS);
      pthread_mutex_lock (&timer_lock);
    }
  return NULL;
}

static void
start_timer (void)
{
  if (pocl_remote_thread_detached (timer_thread, NULL) == 0)
    __atomic_store_n (&timer_running, 1, __ATOMIC_RELEASE);
  else
    POCL_MSG_WARN ("remote: no timer thread: kernels go one by one\n");
}

static void
wake_timer (void)
{
  if (__atomic_load_n (&held_lately, __ATOMIC_ACQUIRE)
      || __atomic_exchange_n (&held_lately, 1, __ATOMIC_ACQ_REL))
    return;
  pthread_mutex_lock (&timer_lock);
  if (timer_idle)
    pthread_cond_signal (&timer_cond);
  pthread_mutex_unlock (&timer_lock);
}

/* Whether message `seq` of `type`, just logged, stays in the log for now
   (the command link's send lock held).  */
static int
hold (remote_server *s, uint32_t type, uint64_t seq)
{
  unsigned max = pocl_remote_coalesce_max ();
  if (max == 0)
    return 0;
  uint64_t now = pocl_gettimemono_ns (), last = s->last_cmd_ns;
  s->last_cmd_ns = now;
  uint64_t held = s->held_from != 0 ? seq - s->held_from : 0;
  /* the commands in flight include the held ones and this one */
  uint64_t in_flight = __atomic_load_n (&s->in_flight, __ATOMIC_ACQUIRE);
  if (type != POCL_RMSG_NDRANGE || now - last > REMOTE_BURST_NS || held >= max
      || in_flight <= held + 1)
    return 0;
  pthread_once (&timer_once, start_timer);
  if (!__atomic_load_n (&timer_running, __ATOMIC_ACQUIRE))
    return 0;
  if (s->held_from == 0)
    {
      s->held_since = now;
      __atomic_store_n (&s->held_from, seq, __ATOMIC_RELEASE);
      __atomic_fetch_add (&holding, 1, __ATOMIC_ACQ_REL);
    }
  wake_timer ();
  return 1;
}

uint64_t
pocl_remote_unhold (remote_server *s)
{
  uint64_t q = s->held_from;
  if (q != 0)
    {
      __atomic_store_n (&s->held_from, 0, __ATOMIC_RELEASE);
      __atomic_fetch_sub (&holding, 1, __ATOMIC_ACQ_REL);
    }
  return q;
}

/* The trace's send of held messages from..to: the write that took them.  */
static void
trace_held (remote_server *s, uint64_t from, uint64_t to, uint64_t t0)
{
  remote_log *log = &s->log[0];
  uint64_t t1 = pocl_remote_trace_now (), q;
  for (q = from; q <= to; ++q)
    {
      const pocl_remote_hdr *h = &log->ring[q & (log->cap - 1)].hdr;
      pocl_remote_trace_record (REMOTE_TRACE_SEND, s->index, h->id, h->type,
                                sizeof (*h) + h->body_size + h->payload_size,
                                t0, t1);
    }
}

void
pocl_remote_take_ack (remote_server *s, pocl_remote_hdr *h, pocl_remote_ack *a)
{
  a->seen[0] = __atomic_load_n (&s->seen[0], __ATOMIC_ACQUIRE);
  a->seen[1] = __atomic_load_n (&s->seen[1], __ATOMIC_ACQUIRE);
  h->type = POCL_RMSG_ACK;
  h->body_size = sizeof (*a);
  h->payload_size = 0;
  h->id = 0;
  __atomic_store_n (&s->ack_due, 0, __ATOMIC_RELEASE);
  __atomic_store_n (&s->seen_at_last_ack, a->seen[0] + a->seen[1],
                    __ATOMIC_RELEASE);
  __atomic_store_n (&s->payload_since_ack, 0, __ATOMIC_RELEASE);
}

/* The most pieces of one write of the command link: a burst's messages.  */
#define CMD_IOV (8 * (REMOTE_COALESCE_MAX + 1))

/* Writes iov (n <= CMD_IOV) on the command link, after the ACK that is due
   if one is (the link's send lock held).  */
static int
cmd_send (remote_server *s, struct iovec *iov, int n)
{
  if (!__atomic_load_n (&s->ack_due, __ATOMIC_ACQUIRE))
    return pocl_remote_link_send (&s->cmd, iov, n);
  struct iovec all[2 + CMD_IOV];
  pocl_remote_hdr h;
  pocl_remote_ack a;
  pocl_remote_take_ack (s, &h, &a);
  all[0].iov_base = &h;
  all[0].iov_len = sizeof (h);
  all[1].iov_base = &a;
  all[1].iov_len = sizeof (a);
  memcpy (all + 2, iov, (size_t)n * sizeof (*iov));
  return pocl_remote_link_send (&s->cmd, all, n + 2);
}

/* Sends the held messages, the last of them `last_held`, and those after
   them up to message `upto`, in order (the command link's send lock held).
   What a broken link does not take goes with the resume's replay.  */
static int
send_held (remote_server *s, uint64_t last_held, uint64_t upto)
{
  remote_log *log = &s->log[0];
  uint64_t q = pocl_remote_unhold (s);
  if (q == 0 || __atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
    return 0;
  while (q <= upto)
    {
      struct iovec iov[CMD_IOV];
      int n = 0;
      uint64_t first = q, t0 = REMOTE_TRACE_T0 ();
      for (; q <= upto && n + 8 <= (int)(sizeof (iov) / sizeof (iov[0])); ++q)
        n += pocl_remote_log_iov (&log->ring[q & (log->cap - 1)], iov + n);
      if (cmd_send (s, iov, n))
        return -1;
      if (__builtin_expect (pocl_remote_trace_on, 0) && first <= last_held)
        trace_held (s, first, q - 1 < last_held ? q - 1 : last_held, t0);
    }
  return 0;
}

int
pocl_remote_send_cmd (remote_server *s, uint32_t type, struct iovec *iov,
                      int n)
{
  uint64_t seq = s->log[0].next - 1;
  if (hold (s, type, seq))
    return 1;
  if (s->held_from != 0)
    return send_held (s, seq - 1, seq);
  return cmd_send (s, iov, n);
}

/* Sends what s holds if it was held at `held_before` (monotonic ns) or
   earlier.  */
static void
flush_held (remote_server *s, uint64_t held_before)
{
  if (__atomic_load_n (&s->held_from, __ATOMIC_ACQUIRE) == 0)
    return;
  pthread_mutex_lock (&s->cmd_send_lock);
  if (s->held_from != 0 && s->held_since <= held_before)
    send_held (s, s->log[0].next - 1, s->log[0].next - 1);
  pthread_mutex_unlock (&s->cmd_send_lock);
}

void
pocl_remote_flush_idle (remote_server *s)
{
  if (__atomic_load_n (&s->held_from, __ATOMIC_ACQUIRE) == 0)
    return;
  pthread_mutex_lock (&s->cmd_send_lock);
  uint64_t next = s->log[0].next;
  if (s->held_from != 0
      && __atomic_load_n (&s->in_flight, __ATOMIC_ACQUIRE)
             <= next - s->held_from)
    send_held (s, next - 1, next - 1);
  pthread_mutex_unlock (&s->cmd_send_lock);
}

void
pocl_remote_flush_all_held (uint64_t held_before)
{
  if (!some_held ())
    return;
  pocl_remote_registry_lock ();
  remote_server *s;
  for (s = pocl_remote_registry_first (); s != NULL; s = s->next)
    flush_held (s, held_before);
  pocl_remote_registry_unlock ();
}

/* The trace's send events: commands, their DATA, and the notifications
   and subscriptions of events (which name the event in their body).  */
static void
trace_send (remote_server *s, uint32_t type, uint64_t id, const void *body,
            uint64_t bytes, uint64_t t0)
{
  remote_trace_what what = REMOTE_TRACE_SEND;
  if (type < POCL_RMSG_NOTIFY_EVENT || type > POCL_RMSG_DATA)
    return;
  if (type == POCL_RMSG_DATA)
    what = REMOTE_TRACE_SEND_DATA;
  else if (type == POCL_RMSG_NOTIFY_EVENT || type == POCL_RMSG_SUBSCRIBE)
    {
      what = REMOTE_TRACE_NOTIFY;
      memcpy (&id, body, sizeof (id));
    }
  pocl_remote_trace_record (what, s->index, id, type, bytes, t0,
                            pocl_remote_trace_now ());
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
  if (__builtin_expect (__atomic_load_n (&s->host_copies, __ATOMIC_ACQUIRE),
                        0))
    pocl_remote_handlers.before_send (s);
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
  uint64_t trace_t0 = REMOTE_TRACE_T0 ();
  int held = 0;
  pthread_mutex_lock (lock);
  pocl_remote_log_trim (
      log, __atomic_load_n (&s->acked[data_socket], __ATOMIC_ACQUIRE));
  int r = pocl_remote_log_append (log, iov, n, stable);
  /* A large payload in one piece may go another way (the bulk transport,
     which marks the header); the log keeps the plain type: sent again, it
     comes inline.  */
  uint32_t mark = data_socket && total >= POCL_REMOTE_STRIPE_MIN
                          && iov[n - 1].iov_len == total
                      ? s->bulk.ops->mark (&s->bulk, total)
                      : 0;
  /* A failed write is the reader's to notice: the message is logged, and
     the reconnect sends it again.  */
  if (r == 0 && !__atomic_load_n (&s->down, __ATOMIC_ACQUIRE))
    {
      pocl_remote_link *l = data_socket ? &s->data : &s->cmd;
      if (!data_socket)
        held = pocl_remote_send_cmd (s, type, iov, n) == 1;
      else if (mark == 0)
        pocl_remote_link_send (l, iov, n);
      else
        {
          h.type |= mark;
          /* PARTIAL: the link is in step but pocld did not get the
             payload (UCX failed under it): the links break, and the
             resume sends it again inline.  */
          if (pocl_remote_link_send (l, iov, n - 1) == 0
              && s->bulk.ops->send (&s->bulk, l, mark, iov[n - 1].iov_base,
                                    total, NULL)
                     == POCL_REMOTE_BULK_PARTIAL)
            pocl_remote_shutdown_links (s);
        }
    }
  pthread_mutex_unlock (lock);
  __atomic_fetch_add (&s->bytes_sent, sizeof (h) + body_size + total,
                      __ATOMIC_RELAXED);
  if (__builtin_expect (pocl_remote_trace_on, 0) && !held)
    trace_send (s, type, id, body, sizeof (h) + body_size + total, trace_t0);
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

void
pocl_remote_shutdown_links (remote_server *s)
{
  pocl_remote_link_shutdown (&s->cmd);
  pocl_remote_link_shutdown (&s->data);
  s->bulk.ops->shutdown (&s->bulk);
}
