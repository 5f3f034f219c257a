/* remote_resume.c - the life of a session's links: their readers started
   (remote_reader.c; for a new session and a resumed one), and when a reader
   finds its link broken, which it tells through the function it was
   started with, the thread that reconnects and resumes the session
   (doc/reconnect.md).  While the connections are down, senders only log
   (remote_send.c); the reconnect thread replays what the server did not get,
   in order, before anything new goes out.  */

#include <string.h>
#include <unistd.h>

#include "pocl_debug.h"
#include "pocl_remote_auth.h"
#include "pocl_runtime_config.h"
#include "pocl_timing.h"
#include "remote_channel_private.h"

/* The longest a silent link goes unnoticed: keepalive and user timeout of
   every PoCL-R socket (pocl_remote_tcp.h).  */
#define RECONNECT_DETECT_MS 10000

/* Writes the entries after `seen` to l, dropping those before.  */
static int
log_replay (remote_log *log, pocl_remote_link *l, uint64_t seen,
            uint64_t *count)
{
  pocl_remote_log_trim (log, seen);
  *count = 0;
  uint64_t q;
  for (q = log->first; q < log->next; ++q)
    {
      struct iovec iov[8];
      int n = pocl_remote_log_iov (&log->ring[q & (log->cap - 1)], iov);
      if (pocl_remote_link_send (l, iov, n))
        return -1;
      ++*count;
    }
  return 0;
}

/* Messages ever appended.  */
static uint64_t
log_count (const remote_log *log)
{
  return log->next ? log->next - 1 : 0;
}

/* Whether the server's count of our messages fits what we sent and what
   it acknowledged before.  */
static int
count_ok (const remote_log *log, uint64_t seen)
{
  return seen <= log_count (log) && (log->first == 0 || seen + 1 >= log->first);
}

static uint64_t
now_ms (void)
{
  return pocl_gettimemono_ns () / 1000000;
}

/* One attempt: both sockets connected and handshaken as a resume, the
   logs replayed.  0: resumed; 1: try again; -1: the server does not have
   the session any more.  */
static int
resume (remote_server *s, const char *key, size_t key_len)
{
  long timeout_ms
      = pocl_get_int_option ("POCL_REMOTE_CONNECT_TIMEOUT_MS", 5000);
  /* The readers of the broken (or last attempt's) sockets end first: the
     counts are final then, and the sockets can be closed.  */
  pthread_mutex_lock (&s->table_lock);
  while (s->readers > 0)
    pthread_cond_wait (&s->reply_cond, &s->table_lock);
  pthread_mutex_unlock (&s->table_lock);
  __atomic_store_n (&s->rebroken, 0, __ATOMIC_RELEASE);
  uint16_t data_port = (uint16_t)(s->port + POCL_REMOTE_DATA_PORT_OFFSET);
  uint64_t seen[2] = { __atomic_load_n (&s->seen[0], __ATOMIC_ACQUIRE),
                       __atomic_load_n (&s->seen[1], __ATOMIC_ACQUIRE) };
  pocl_remote_hello_reply rep;
  uint64_t t0, t1;
  /* With TLS, STARTTLS names the session by its route.  */
  pocl_remote_link cmd, data;
  pocl_remote_link_clear (&cmd);
  pocl_remote_link_clear (&data);
  if (s->transport->open (&cmd, s->host, data_port, POCL_REMOTE_ROLE_COMMAND,
                          s->session_id, (int)timeout_ms))
    return 1;
  cl_int err = pocl_remote_handshake (s, &cmd, POCL_REMOTE_ROLE_COMMAND, 0,
                                      s->session_id, seen, key, key_len, &rep,
                                      &t0, &t1);
  if (err != CL_SUCCESS)
    {
      pocl_remote_link_close (&cmd);
      POCL_MSG_WARN ("remote: resume refused by %s:%u (%d)\n", s->host,
                     s->port, err);
      /* a PoCL-R refusal: the session is gone (server restarted, expired) */
      return err == CL_INVALID_VALUE ? -1 : 1;
    }
  pocl_remote_hello_reply drep;
  if (s->transport->open (&data, s->host, data_port, POCL_REMOTE_ROLE_DATA,
                          s->session_id, (int)timeout_ms)
      || pocl_remote_handshake (s, &data, POCL_REMOTE_ROLE_DATA, 0,
                                s->session_id, NULL, key, key_len, &drep, &t0,
                                &t1)
             != CL_SUCCESS)
    {
      POCL_MSG_WARN ("remote: resume: no data socket to %s:%u\n", s->host,
                     s->port);
      pocl_remote_link_close (&data);
      pocl_remote_link_close (&cmd);
      return 1;
    }

  uint64_t sent[2] = { 0, 0 };
  int r = 0, bulk = 0;
  pthread_mutex_lock (&s->cmd_send_lock);
  pthread_mutex_lock (&s->data_send_lock);
  if (!count_ok (&s->log[0], rep.seen[0]) || !count_ok (&s->log[1], rep.seen[1]))
    r = -1; /* counts of messages we never sent: not our session */
  else
    {
      /* The old links' readers have ended, and senders wait for the locks
         held here.  */
      pocl_remote_link_close (&s->cmd);
      pocl_remote_link_close (&s->data);
      s->bulk.ops->close (&s->bulk);
      pocl_remote_link_set (&s->cmd, &cmd);
      pocl_remote_link_set (&s->data, &data);
      __atomic_store_n (&s->acked[0], rep.seen[0], __ATOMIC_RELEASE);
      __atomic_store_n (&s->acked[1], rep.seen[1], __ATOMIC_RELEASE);
      /* Readers first: the server replays its own log at once, and must
         not block on a full socket while we replay ours.  */
      /* what was held goes with the replay */
      pocl_remote_unhold (s);
      if (pocl_remote_start_readers (s)
          || log_replay (&s->log[0], &s->cmd, rep.seen[0], &sent[0])
          || log_replay (&s->log[1], &s->data, rep.seen[1], &sent[1]))
        r = 1;
      else
        {
          /* Counted in before a failure can start the next resume, which
             must wait for it.  */
          bulk = pocl_remote_bulk_reserve (s);
          __atomic_store_n (&s->down, 0, __ATOMIC_RELEASE);
          /* A new reader that failed before `down` was cleared did not
             start a reconnect: take it over, unless a later failure
             already did.  */
          if (__atomic_exchange_n (&s->rebroken, 0, __ATOMIC_ACQ_REL)
              && !__atomic_exchange_n (&s->down, 1, __ATOMIC_ACQ_REL))
            r = 1;
        }
      if (r)
        {
          POCL_MSG_WARN ("remote: resume: the new connection to %s:%u broke "
                         "at once\n",
                         s->host, s->port);
          pocl_remote_link_shutdown (&s->cmd);
          pocl_remote_link_shutdown (&s->data);
        }
    }
  pthread_mutex_unlock (&s->data_send_lock);
  pthread_mutex_unlock (&s->cmd_send_lock);
  if (r < 0)
    {
      pocl_remote_link_close (&data);
      pocl_remote_link_close (&cmd);
    }
  if (bulk)
    s->bulk_transport->start (s);
  if (r)
    return r;
  POCL_MSG_PRINT_INFO ("remote: resumed the session with %s:%u: it had %" PRIu64
                       " + %" PRIu64 " of our messages, we re-sent %" PRIu64
                       " + %" PRIu64 "\n",
                       s->host, s->port, rep.seen[0], rep.seen[1], sent[0],
                       sent[1]);
  return 0;
}

static void *
reconnect_thread (void *p)
{
  remote_server *s = (remote_server *)p;
  /* By default as long as the server keeps the session, counted from when
     it noticed the break, up to a TCP detection time (pocl_remote_tcp.h)
     after us: a server that dropped it earlier says so and ends this.  */
  long limit_ms = pocl_get_int_option ("POCL_REMOTE_RECONNECT_TIMEOUT_MS",
                                       (long)s->session_grace_ms
                                           + RECONNECT_DETECT_MS);
  uint64_t start = now_ms ();
  unsigned backoff_ms = 10;
  char key[POCL_REMOTE_MAX_KEY];
  long key_len = pocl_remote_client_key (key);
  int r = key_len < 0 ? -1 : 1;
  while (r > 0 && !pocl_remote_dead (s))
    {
      r = resume (s, key, (size_t)(key_len > 0 ? key_len : 0));
      if (r <= 0 || now_ms () - start >= (uint64_t)limit_ms)
        break;
      usleep (backoff_ms * 1000);
      backoff_ms = backoff_ms < 1000 ? backoff_ms * 2 : 1000;
    }
  memset (key, 0, sizeof (key));
  if (r == 0)
    {
      POCL_MSG_WARN ("remote: reconnected to %s:%u after %" PRIu64 " ms\n",
                     s->host, s->port, now_ms () - start);
    }
  else
    {
      POCL_MSG_ERR ("remote: %s:%u %s\n", s->host, s->port,
                    r < 0 ? "does not have our session any more"
                          : "did not come back in time "
                            "(POCL_REMOTE_RECONNECT_TIMEOUT_MS)");
      pocl_remote_server_lost (s);
    }
  return NULL;
}

/* A reader found its socket broken.  The first one starts the reconnect;
   both sockets are shut down so that the other reader ends too.  */
static void
connection_broken (remote_server *s)
{
  if (pocl_remote_dead (s) || __atomic_load_n (&s->leaving, __ATOMIC_ACQUIRE))
    return;
  if (__atomic_exchange_n (&s->down, 1, __ATOMIC_ACQ_REL))
    {
      /* a reconnect runs: if it has just started these readers, it must
         know that they failed */
      __atomic_store_n (&s->rebroken, 1, __ATOMIC_RELEASE);
      return;
    }
  POCL_MSG_WARN ("remote: lost the connection to %s:%u, reconnecting\n",
                 s->host, s->port);
  pocl_remote_shutdown_links (s);
  pthread_attr_t attr;
  pthread_attr_init (&attr);
  pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  if (pthread_create (&t, &attr, reconnect_thread, s))
    pocl_remote_server_lost (s);
  pthread_attr_destroy (&attr);
}

int
pocl_remote_start_readers (remote_server *s)
{
  return pocl_remote_reader_start (s, connection_broken);
}
