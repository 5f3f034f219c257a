/* remote_trace.c - the client's command trace: records in memory, one
   Chrome trace-event JSON file at exit (doc/tracing.md).  */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pocl_remote_trace_clock.h"
#include "remote_channel_private.h"
#include "remote_trace.h"

int pocl_remote_trace_on;

typedef struct trace_rec
{
  uint64_t t0, t1; /* t1 == 0: a point event */
  uint64_t id, bytes;
  uint32_t tid, type;
  uint16_t what, server;
} trace_rec;

/* Records in chunks, so that the buffer grows without copying.  */
#define TRACE_CHUNK 8192
typedef struct trace_chunk
{
  struct trace_chunk *next;
  unsigned n;
  trace_rec r[TRACE_CHUNK];
} trace_chunk;

typedef struct trace_thread
{
  uint32_t tid;
  char name[16];
} trace_thread;

typedef struct trace_server
{
  int known;
  char host[64];
  unsigned port;
  char session[33];
  int64_t offset_ns; /* server CLOCK_MONOTONIC minus ours */
  uint64_t rtt_ns;   /* of the sample kept: the offset is +- half */
} trace_server;

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static char *trace_path;
static trace_chunk *trace_head, *trace_tail;
static trace_thread *trace_threads;
static unsigned trace_nthreads, trace_cap_threads;
static trace_server trace_servers[POCL_REMOTE_MAX_PEERS];
static __thread uint32_t trace_tid;

static const char *const what_names[REMOTE_TRACE_WHAT_COUNT]
    = { "enqueue", "send", "send_data", "notify", "completion", "read_data",
        "complete" };

uint64_t
pocl_remote_trace_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A thread's first event notes its name (trace_lock held).  */
static void
note_thread (uint32_t tid)
{
  if (trace_nthreads == trace_cap_threads)
    {
      unsigned cap = trace_cap_threads ? 2 * trace_cap_threads : 16;
      trace_thread *t = realloc (trace_threads, cap * sizeof (*t));
      if (t == NULL)
        return;
      trace_threads = t;
      trace_cap_threads = cap;
    }
  trace_thread *t = &trace_threads[trace_nthreads++];
  t->tid = tid;
  if (pthread_getname_np (pthread_self (), t->name, sizeof (t->name)) != 0)
    snprintf (t->name, sizeof (t->name), "thread");
}

void
pocl_remote_trace_record (remote_trace_what what, uint32_t server,
                          uint64_t id, uint32_t msg_type, uint64_t bytes,
                          uint64_t t0, uint64_t t1)
{
  if (t0 == 0)
    t0 = pocl_remote_trace_now ();
  int new_thread = trace_tid == 0;
  if (new_thread)
    trace_tid = (uint32_t)syscall (SYS_gettid);
  pthread_mutex_lock (&trace_lock);
  if (new_thread)
    note_thread (trace_tid);
  if (trace_tail == NULL || trace_tail->n == TRACE_CHUNK)
    {
      trace_chunk *c = malloc (sizeof (trace_chunk));
      if (c == NULL)
        {
          pthread_mutex_unlock (&trace_lock);
          return;
        }
      c->next = NULL;
      c->n = 0;
      if (trace_tail)
        trace_tail->next = c;
      else
        trace_head = c;
      trace_tail = c;
    }
  trace_rec *r = &trace_tail->r[trace_tail->n++];
  r->t0 = t0;
  r->t1 = t1;
  r->id = id;
  r->bytes = bytes;
  r->tid = trace_tid;
  r->type = msg_type;
  r->what = (uint16_t)what;
  r->server = (uint16_t)server;
  pthread_mutex_unlock (&trace_lock);
}

/* Microseconds with nanosecond digits, as the format wants.  */
static void
put_us (FILE *f, uint64_t ns)
{
  fprintf (f, "%llu.%03llu", (unsigned long long)(ns / 1000),
           (unsigned long long)(ns % 1000));
}

static void
write_rec (FILE *f, int pid, const trace_rec *r)
{
  uint64_t dur = r->t1 > r->t0 ? r->t1 - r->t0 : 1;
  fprintf (f, ",\n{\"name\":\"%s\",\"cat\":\"remote\",\"ph\":\"X\",\"ts\":",
           what_names[r->what]);
  put_us (f, r->t0);
  fputs (",\"dur\":", f);
  put_us (f, dur);
  fprintf (f,
           ",\"pid\":%d,\"tid\":%u,\"args\":{\"id\":%llu,\"server\":%u,"
           "\"msg\":%u,\"bytes\":%llu}}",
           pid, r->tid, (unsigned long long)r->id, r->server, r->type,
           (unsigned long long)r->bytes);
  /* The command's flow: begun at its enqueue, ended at its completion,
     through every other event of the same id (doc/tracing.md).  */
  const char *ph = r->what == REMOTE_TRACE_ENQUEUE    ? "s"
                   : r->what == REMOTE_TRACE_COMPLETE ? "f"
                                                      : "t";
  fprintf (f,
           ",\n{\"name\":\"command\",\"cat\":\"flow\",\"ph\":\"%s\",\"id\":"
           "%llu,\"bp\":\"e\",\"ts\":",
           ph, (unsigned long long)r->id);
  put_us (f, r->t0);
  fprintf (f, ",\"pid\":%d,\"tid\":%u}", pid, r->tid);
}

/* Writes the whole trace to a temporary file renamed over the target, so
   that the file is always complete JSON.  */
static void
trace_flush (void)
{
  pthread_mutex_lock (&trace_lock);
  size_t len = strlen (trace_path);
  char *tmp = malloc (len + 8);
  if (tmp == NULL)
    {
      pthread_mutex_unlock (&trace_lock);
      return;
    }
  snprintf (tmp, len + 8, "%s.tmp", trace_path);
  FILE *f = fopen (tmp, "w");
  if (f == NULL)
    {
      POCL_MSG_ERR ("remote: cannot write the trace %s: %s\n", tmp,
                    strerror (errno));
      free (tmp);
      pthread_mutex_unlock (&trace_lock);
      return;
    }
  int pid = (int)getpid ();
  char comm[64] = "";
  FILE *cf = fopen ("/proc/self/comm", "r");
  if (cf)
    {
      if (fgets (comm, sizeof (comm), cf) == NULL)
        comm[0] = 0;
      comm[strcspn (comm, "\n\"\\")] = 0;
      fclose (cf);
    }
  char boot_id[POCL_REMOTE_BOOT_ID_LEN + 1];
  int64_t mono_offset = 0;
  pocl_remote_trace_clock (boot_id, &mono_offset);
  fprintf (f,
           "{\"displayTimeUnit\":\"ns\",\"pocl_remote\":{\"role\":\"client\","
           "\"pid\":%d,\"clock\":\"CLOCK_MONOTONIC\",\"boot_id\":\"%s\","
           "\"monotonic_offset_ns\":%lld,\"servers\":[",
           pid, boot_id, (long long)mono_offset);
  int first = 1;
  for (unsigned i = 0; i < POCL_REMOTE_MAX_PEERS; ++i)
    {
      const trace_server *ts = &trace_servers[i];
      if (!ts->known)
        continue;
      fprintf (f,
               "%s\n{\"index\":%u,\"host\":\"%s\",\"port\":%u,\"session\":"
               "\"%s\",\"offset_ns\":%lld,\"rtt_ns\":%llu}",
               first ? "" : ",", i, ts->host, ts->port, ts->session,
               (long long)ts->offset_ns, (unsigned long long)ts->rtt_ns);
      first = 0;
    }
  fprintf (f,
           "]},\n\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\","
           "\"pid\":%d,\"args\":{\"name\":\"client %s (%d)\"}}",
           pid, comm, pid);
  for (unsigned i = 0; i < trace_nthreads; ++i)
    fprintf (f,
             ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
             "\"args\":{\"name\":\"%s\"}}",
             pid, trace_threads[i].tid, trace_threads[i].name);
  for (trace_chunk *c = trace_head; c; c = c->next)
    for (unsigned i = 0; i < c->n; ++i)
      write_rec (f, pid, &c->r[i]);
  fputs ("\n]}\n", f);
  if (fclose (f) != 0 || rename (tmp, trace_path) != 0)
    POCL_MSG_ERR ("remote: cannot write the trace %s: %s\n", trace_path,
                  strerror (errno));
  free (tmp);
  pthread_mutex_unlock (&trace_lock);
}

__attribute__ ((constructor)) static void
trace_init (void)
{
  const char *path = getenv ("POCL_REMOTE_TRACE");
  if (path == NULL || *path == 0)
    return;
  trace_path = strdup (path);
  if (trace_path == NULL)
    return;
  atexit (trace_flush);
  pocl_remote_trace_on = 1;
}

void
pocl_remote_trace_server (remote_server *s, int64_t offset_ns, uint64_t rtt_ns)
{
  if (!pocl_remote_trace_on || s->index >= POCL_REMOTE_MAX_PEERS)
    return;
  trace_server ts;
  memset (&ts, 0, sizeof (ts));
  ts.known = 1;
  snprintf (ts.host, sizeof (ts.host), "%s", s->host);
  ts.host[strcspn (ts.host, "\"\\")] = 0;
  ts.port = s->port;
  for (int i = 0; i < 16; ++i)
    snprintf (ts.session + 2 * i, 3, "%02x", s->session_id[i]);
  ts.offset_ns = offset_ns;
  ts.rtt_ns = rtt_ns;
  pthread_mutex_lock (&trace_lock);
  trace_servers[s->index] = ts;
  pthread_mutex_unlock (&trace_lock);
}
