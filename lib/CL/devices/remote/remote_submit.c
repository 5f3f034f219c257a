/* remote_submit.c - the command path: each enqueued command leaves for pocld
   at once, from the application's own thread, with its wait list; pocld
   resolves the dependencies and answers with one COMPLETION, which the
   channel's reader hands to pocl_remote_complete (a handler registered by
   remote.c).  */

#include <string.h>
#include <unistd.h>

#include "common.h"
#include "pocl_remote_workers.h"
#include "pocl_runtime_config.h"
#include "pocl_timing.h"
#include "pocl_tracing.h"
#include "pocl_util.h"
#include "remote.h"
#include "utlist.h"

/* Commands with more waits than this build their wait list on the heap.  */
#define STACK_WAITS 32

static remote_event *
new_remote_event (cl_event e, remote_server *s, remote_server *ws)
{
  remote_event *re = calloc (1, sizeof (remote_event));
  if (re == NULL)
    return NULL;
  re->inflight.id = e->id;
  re->event = e;
  re->server = s;
  re->wait_server = ws;
  pthread_cond_init (&re->cond, NULL);
  e->data = re;
  return re;
}

/* Fills w with e's pending dependencies, for server s.  A dependency on a
   command s already received is resolved there natively; one on a command
   another server already received, which is s's peer, is announced to s by
   that server (owners[i] gets it, to be asked with SUBSCRIBE); anything else
   (user events, local devices, a command still being sent by another
   thread) is FOREIGN, and announced by pocl_remote_notify_dep.
   in_order_queue: dependencies from this in-order queue are implied.  */
static uint32_t
build_waits (cl_event e, remote_server *s, cl_command_queue in_order_queue,
             pocl_remote_wait *w, remote_server **owners)
{
  remote_event *re = (remote_event *)e->data;
  struct pocl_device_ops *ops = e->queue->device->ops;
  uint32_t n = 0;
  event_node *node;
  LL_FOREACH (e->wait_list, node)
  {
    cl_event dep = node->event;
    remote_event *dre = (remote_event *)dep->data;
    int remote = dep->queue && dep->queue->device->ops == ops && dre
                 && __atomic_load_n (&dre->sent, __ATOMIC_ACQUIRE);
    int same_server = remote && dre->server == s;
    /* the server's queue is in order too */
    if (same_server && dep->queue == in_order_queue)
      continue;
    owners[n] = NULL;
    w[n].event_id = dep->id;
    if (same_server)
      w[n].origin = POCL_REMOTE_WAIT_SAME_SERVER;
    else if (remote && pocl_remote_linked (s, dre->server))
      {
        w[n].origin = POCL_REMOTE_WAIT_PEER;
        owners[n] = dre->server;
      }
    else
      {
        w[n].origin = POCL_REMOTE_WAIT_FOREIGN;
        if (re->num_foreign < REMOTE_FOREIGN_IDS)
          re->foreign[re->num_foreign] = dep->id;
        re->num_foreign++;
      }
    w[n].reserved = 0;
    ++n;
  }
  return n;
}

/* Asks the servers running e's PEER dependencies to tell s when they are
   done.  After the command: s may hear of them before it; no matter.  */
static void
subscribe (remote_server *s, const pocl_remote_wait *w,
           remote_server **owners, uint32_t n)
{
  uint32_t i;
  for (i = 0; i < n; ++i)
    if (owners[i])
      {
        pocl_remote_subscribe sub = { w[i].event_id, s->index, 0 };
        pocl_remote_send (owners[i], 0, POCL_RMSG_SUBSCRIBE, 0, &sub,
                          sizeof (sub), NULL, 0);
      }
}

static uint32_t
count_waits (cl_event e)
{
  uint32_t n = 0;
  event_node *node;
  LL_FOREACH (e->wait_list, node)
  ++n;
  return n;
}

/* A buffer whose migration failed: its latest content was on a server that
   is gone (or never arrived), while PoCL counts the destination's copy as
   the latest.  Every later command on the buffer fails rather than see the
   old bytes (doc/reconnect.md, "Content on a lost server").  The mark is
   in the buffer's identifier on every remote device of its context; until
   the first one, a submit reads one flag instead of every buffer's.  */
#define REMOTE_MEM_LOST 1u
static unsigned marked_lost;

static void
mark_lost (cl_mem mem, cl_device_id remote)
{
  cl_context ctx = mem->context;
  cl_uint i;
  for (i = 0; i < ctx->num_devices; ++i)
    if (ctx->devices[i]->ops == remote->ops)
      __atomic_or_fetch (
          &mem->device_ptrs[ctx->devices[i]->global_mem_id].extra,
          REMOTE_MEM_LOST, __ATOMIC_RELEASE);
  __atomic_store_n (&marked_lost, 1, __ATOMIC_RELEASE);
}

static int
is_lost (cl_mem mem, cl_device_id dev)
{
  return (__atomic_load_n (&mem->device_ptrs[dev->global_mem_id].extra,
                           __ATOMIC_ACQUIRE)
          & REMOTE_MEM_LOST)
         != 0;
}

static int
uses_lost (cl_event e, cl_device_id dev)
{
  size_t i;
  if (!__atomic_load_n (&marked_lost, __ATOMIC_ACQUIRE))
    return 0;
  for (i = 0; i < e->num_buffers; ++i)
    {
      cl_mem m = e->mem_objs[i];
      if (is_lost (m, dev) || (m->parent != NULL && is_lost (m->parent, dev)))
        return 1;
    }
  return 0;
}

static void
fail_event (remote_server *s, remote_event *re, cl_int status)
{
  /* the loss handler may have taken it already */
  if (pocl_remote_event_take (s, re->inflight.id) != &re->inflight)
    return;
  pocl_remote_completion c;
  memset (&c, 0, sizeof (c));
  c.status = status;
  pocl_remote_complete (s, &re->inflight, &c);
}

/* The command clEnqueueMigrateMemObjects itself enqueues only orders: the
   migrations are the commands PoCL put before it.  When every dependency
   is a command some server already received, its completion reaches a
   reader thread, which then completes this one too (deferred list): no
   message, no server round trip, no native callback.  Other dependencies
   (user events, local devices) could complete on a thread that would
   never look at the deferred list, so then the command goes out as a
   marker.  */
/* dep's remote event if dep is a command of this driver that goes to a
   server (not one completed on the client: local), else NULL.  */
static remote_event *
server_dep (cl_event e, cl_event dep)
{
  remote_event *dre = (remote_event *)dep->data;
  if (dep->queue == NULL || dep->queue->device->ops != e->queue->device->ops
      || dre == NULL || dre->local)
    return NULL;
  return dre;
}

static int
local_noop (_cl_command_node *node, cl_event e)
{
  if (node->type != CL_COMMAND_MIGRATE_MEM_OBJECTS
      || node->command.migrate.type != ENQUEUE_MIGRATE_TYPE_NOP)
    return 0;
  event_node *n;
  LL_FOREACH (e->wait_list, n)
  {
    remote_event *dre = server_dep (e, n->event);
    if (dre == NULL || !__atomic_load_n (&dre->sent, __ATOMIC_ACQUIRE))
      return 0;
  }
  return 1;
}

/* Whether a dependency is a command of this driver that has not left the
   client yet (held: below).  A command waiting for it must not leave
   before it: the server would enqueue the two in the order they arrive,
   and a barrier of an out-of-order queue, enqueued first, would hold back
   the command it waits for.  Called with the event locked.  */
static int
waits_for_held (cl_event e)
{
  event_node *n;
  LL_FOREACH (e->wait_list, n)
  {
    remote_event *dre = server_dep (e, n->event);
    if (dre != NULL && !__atomic_load_n (&dre->sent, __ATOMIC_ACQUIRE))
      return 1;
  }
  return 0;
}

/* A command is running, as far as the client can know, once the server has
   it and every dependency is done: then nothing but the server's queue
   holds it back.  Derived here, at no cost on the command path, so that
   the status goes CL_QUEUED, CL_SUBMITTED, CL_RUNNING, CL_COMPLETE as on a
   local device.  Called with the event locked.  A dependency's completion
   (notify) also holds the dependency's lock, which a CL_RUNNING callback
   may want: there only the status changes, and the callbacks are called
   with the completion (callbacks_owed).  */
static void
mark_running (cl_event e, int callbacks_now)
{
  remote_event *re = (remote_event *)e->data;
  if (e->status != CL_SUBMITTED || e->wait_list != NULL
      || re->inflight.dep_failed
      || !__atomic_load_n (&re->sent, __ATOMIC_ACQUIRE))
    return;
  if (callbacks_now)
    pocl_update_event_running_unlocked (e);
  else
    {
      e->status = CL_RUNNING;
      re->running_callbacks_owed = 1;
    }
}

static void
pocl_remote_submit (_cl_command_node *node, cl_command_queue cq)
{
  cl_event e = node->sync.event.event;
  /* A read may run on another device's server (the one with the data).  */
  cl_command_queue xq = pocl_remote_exec_queue (node, cq);
  remote_device_data *d = (remote_device_data *)xq->device->data;
  remote_server *s = __atomic_load_n (&d->server, __ATOMIC_ACQUIRE);
  remote_server *ws = pocl_remote_wait_server (node, s);
  pocl_remote_wait stack_waits[STACK_WAITS];
  remote_server *stack_owners[STACK_WAITS];
  pocl_remote_wait *w = stack_waits;
  remote_server **owners = stack_owners;
  int r;

  remote_event *re = new_remote_event (e, s, ws);
  REMOTE_TRACE (REMOTE_TRACE_ENQUEUE, s->index, e->id, node->type, 0);
  uint32_t max_waits = count_waits (e);
  if (max_waits > STACK_WAITS)
    {
      w = malloc (max_waits * sizeof (pocl_remote_wait));
      owners = malloc (max_waits * sizeof (remote_server *));
    }
  if (re == NULL || w == NULL || owners == NULL)
    {
      POCL_UNLOCK_OBJ (e);
      pocl_update_event_finished (CL_OUT_OF_HOST_MEMORY, __func__, __LINE__, e,
                                  NULL);
      return;
    }

  re->moves_content = node->type == CL_COMMAND_MIGRATE_MEM_OBJECTS
                       && node->command.migrate.type != ENQUEUE_MIGRATE_TYPE_NOP;
  int in_order = !(cq->properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  pocl_remote_cmd c;
  c.queue_id = xq->id;
  c.num_waits
      = build_waits (e, ws, in_order && ws == s && xq == cq ? cq : NULL, w,
                     owners);
  c.flags
      = (cq->properties & CL_QUEUE_PROFILING_ENABLE) ? POCL_RCMD_PROFILING : 0;
  if (!e->implicit_event)
    c.flags |= POCL_RCMD_WATCHED;
  struct iovec waits = { w, c.num_waits * sizeof (pocl_remote_wait) };

  node->ready = 1;
  pocl_update_event_submitted (e);
  if (local_noop (node, e))
    {
      re->local = 1;
      int now = e->wait_list == NULL;
      POCL_UNLOCK_OBJ (e);
      if (w != stack_waits)
        {
          free (w);
          free (owners);
        }
      if (now)
        {
          pocl_remote_completion done;
          memset (&done, 0, sizeof (done));
          pocl_remote_complete (s, &re->inflight, &done);
        }
      return;
    }
  /* The bytes of a host-to-device migration are mem_host_ptr's as it is
     when they are sent: with dependencies pending (an export from another
     device still on its way) they leave from pocl_remote_notify_dep.  So
     do kernels and SVM copies that carry fine-grained SVM memory, which a
     dependency may still bring up to date, and whatever waits for a
     command held so.  */
  if (e->wait_list != NULL
      && ((node->type == CL_COMMAND_MIGRATE_MEM_OBJECTS
           && node->command.migrate.type == ENQUEUE_MIGRATE_TYPE_H2D)
          || pocl_remote_svm_holds_back (node) || waits_for_held (e)))
    {
      re->held = node;
      POCL_UNLOCK_OBJ (e);
      if (w != stack_waits)
        {
          free (w);
          free (owners);
        }
      return;
    }
  pocl_remote_event_insert (s, &re->inflight);
  /* a context of a dead session has commands the new one must not see */
  if (uses_lost (e, xq->device))
    r = -3;
  else if (pocl_remote_dead (s) || pocl_remote_dead (ws)
           || pocl_remote_session_for (xq->device, cq->context) == NULL)
    r = -1;
  else
    r = pocl_remote_send_command (s, node, re, &c, &waits);
  __atomic_store_n (&re->sent, 1, __ATOMIC_RELEASE);
  if (r == 0)
    mark_running (e, 1);
  POCL_UNLOCK_OBJ (e);
  if (r == 0)
    subscribe (ws, w, owners, c.num_waits);

  if (w != stack_waits)
    {
      free (w);
      free (owners);
    }
  if (r)
    fail_event (s, re,
                r == -3   ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
                : r == -2 ? CL_INVALID_OPERATION
                          : CL_DEVICE_NOT_AVAILABLE);
}

/* A completion from the server (or a failure made up locally).  Runs on a
   reader thread.  */
void
pocl_remote_complete (remote_server *s, remote_inflight *f,
                      const pocl_remote_completion *c)
{
  remote_event *re = remote_event_of (f);
  cl_event e = re->event;
  cl_command_queue cq = e->queue;

  POCL_LOCK_OBJ (e);
  /* PoCL frees an event once complete, but a dependency not yet completed
     still lists it: hold the completion until the dependencies are done
     (pocl_remote_notify_dep queues it then).  */
  if (e->wait_list != NULL)
    {
      re->completion = *c;
      re->deferred = 1;
      POCL_UNLOCK_OBJ (e);
      return;
    }
  if (cq->properties & CL_QUEUE_PROFILING_ENABLE)
    {
      uint64_t now = pocl_gettimemono_ns ();
      e->time_queue = pocl_remote_server_to_client_time (s, c->ts_queued);
      e->time_submit = pocl_remote_server_to_client_time (s, c->ts_submit);
      e->time_start = pocl_remote_server_to_client_time (s, c->ts_start);
      e->time_end = pocl_remote_server_to_client_time (s, c->ts_end);
      if (e->time_end == 0)
        e->time_queue = e->time_submit = e->time_start = e->time_end = now;
    }
  cl_int status = c->status;
  /* as on a local device, a command whose dependency failed fails, even
     where the server's runtime ran it */
  if (re->inflight.dep_failed)
    status = status < 0 ? status : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  else if (e->status == CL_SUBMITTED)
    pocl_update_event_running_unlocked (e);
  else if (re->running_callbacks_owed)
    {
      re->running_callbacks_owed = 0;
      pocl_event_updated (e, CL_RUNNING);
    }
  POCL_UNLOCK_OBJ (e);

  if (re->svm != NULL)
    pocl_remote_svm_done (re, status);
  if (status != CL_COMPLETE && re->moves_content)
    mark_lost (e->mem_objs[0], cq->device);
  REMOTE_TRACE (REMOTE_TRACE_COMPLETE, s->index, re->inflight.id, 0, 0);
  if (status == CL_COMPLETE)
    pocl_update_event_complete (__func__, __LINE__, e, "remote command");
  else
    pocl_update_event_finished (status < 0 ? status : CL_FAILED, __func__,
                                __LINE__, e, NULL);
}

/* Completions held back by pocl_remote_complete, once their dependencies
   are done.  One list for all servers: the dependency that releases a
   completion may be another server's, whose reader must then complete it.
   Readers complete the list after each message.  A completion released on
   any other thread (a user event's or a local device's broadcast, or a
   dependency that had failed before its command was enqueued) may have no
   message after it, and its command would wait for good: the drainer, a
   thread started the first time that happens, completes it.  */
static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t deferred_cond = PTHREAD_COND_INITIALIZER;
static remote_event *deferred_list;
static int drainer_started;
/* Set on the reader threads.  A pthread key, not __thread: a dlopened
   library's thread-local block crashed LeakSanitizer's tracer at exit
   (ASan runs, gcc 12).  */
static pthread_key_t reader_key;
static pthread_once_t reader_key_once = PTHREAD_ONCE_INIT;

static void
make_reader_key (void)
{
  pthread_key_create (&reader_key, NULL);
}

void
pocl_remote_reader_thread_started (void)
{
  pthread_once (&reader_key_once, make_reader_key);
  pthread_setspecific (reader_key, (void *)1);
}

static int
on_reader (void)
{
  pthread_once (&reader_key_once, make_reader_key);
  return pthread_getspecific (reader_key) != NULL;
}

static void *
drainer (void *arg)
{
  (void)arg;
  pthread_mutex_lock (&deferred_lock);
  for (;;)
    {
      while (deferred_list == NULL)
        pthread_cond_wait (&deferred_cond, &deferred_lock);
      pthread_mutex_unlock (&deferred_lock);
      pocl_remote_complete_deferred ();
      pthread_mutex_lock (&deferred_lock);
    }
  return NULL;
}

/* Queues re's completion (re->completion); callers may hold event locks.  */
static void
defer (remote_event *re)
{
  pthread_mutex_lock (&deferred_lock);
  re->deferred_next = deferred_list;
  __atomic_store_n (&deferred_list, re, __ATOMIC_RELEASE);
  if (!on_reader ())
    {
      if (!drainer_started)
        {
          drainer_started = pocl_remote_thread_detached (drainer, NULL) == 0;
          if (!drainer_started)
            POCL_MSG_ERR ("remote: no thread to complete held completions: "
                          "the next message completes them\n");
        }
      pthread_cond_signal (&deferred_cond);
    }
  pthread_mutex_unlock (&deferred_lock);
}

/* Completes what pocl_remote_notify_dep released; called by the reader
   threads with no locks held.  */
void
pocl_remote_complete_deferred (void)
{
  if (__atomic_load_n (&deferred_list, __ATOMIC_ACQUIRE) == NULL)
    return;
  for (;;)
    {
      pthread_mutex_lock (&deferred_lock);
      remote_event *re = deferred_list;
      if (re)
        __atomic_store_n (&deferred_list, re->deferred_next,
                          __ATOMIC_RELEASE);
      pthread_mutex_unlock (&deferred_lock);
      if (re == NULL)
        return;
      pocl_remote_complete (re->server, &re->inflight, &re->completion);
    }
}

/* finished is one of event's dependencies.  The server learns of foreign
   ones only from us.  */
/* Sends a held command whose dependencies are all done (so it has no
   waits); called with its event locked.  A failure is completed by a
   reader, like a deferred completion.  */
static void
send_held (remote_event *re, cl_event e)
{
  _cl_command_node *node = re->held;
  remote_server *s = re->server;
  re->held = NULL;
  pocl_remote_cmd c;
  c.queue_id = e->queue->id;
  c.num_waits = 0;
  c.flags = (e->queue->properties & CL_QUEUE_PROFILING_ENABLE)
                ? POCL_RCMD_PROFILING
                : 0;
  struct iovec waits = { NULL, 0 };
  pocl_remote_event_insert (s, &re->inflight);
  int r = pocl_remote_dead (s)
              ? -1
              : pocl_remote_send_command (s, node, re, &c, &waits);
  __atomic_store_n (&re->sent, 1, __ATOMIC_RELEASE);
  if (r == 0)
    mark_running (e, 0);
  if (r == 0 || pocl_remote_event_take (s, re->inflight.id) != &re->inflight)
    return;
  memset (&re->completion, 0, sizeof (re->completion));
  re->completion.status = CL_DEVICE_NOT_AVAILABLE;
  defer (re);
}

static void
pocl_remote_notify_dep (cl_device_id device, cl_event event, cl_event finished)
{
  remote_event *re = (remote_event *)event->data;
  unsigned i;

  if (re && finished->status < 0)
    __atomic_store_n (&re->inflight.dep_failed, 1, __ATOMIC_RELEASE);
  if (re && re->held && event->wait_list == NULL)
    {
      send_held (re, event);
      return;
    }
  if (re && re->local)
    {
      if (event->wait_list == NULL)
        defer (re);
      return;
    }
  /* called with both events locked: only queue the held completion */
  if (re && re->deferred && event->wait_list == NULL)
    {
      re->deferred = 0;
      defer (re);
      return;
    }
  if (re == NULL || !__atomic_load_n (&re->sent, __ATOMIC_ACQUIRE))
    return;
  mark_running (event, 0);
  if (re->num_foreign == 0)
    return;
  for (i = 0; i < re->num_foreign && i < REMOTE_FOREIGN_IDS; ++i)
    if (re->foreign[i] == finished->id)
      break;
  if (i == re->num_foreign)
    return;
  pocl_remote_notify n;
  n.event_id = finished->id;
  n.status = finished->status;
  n.reserved = 0;
  pocl_remote_send (re->wait_server, 0, POCL_RMSG_NOTIFY_EVENT, 0, &n,
                    sizeof (n), NULL, 0);
}

static void
pocl_remote_flush (cl_device_id device, cl_command_queue cq)
{
  pocl_remote_flush_all_held (UINT64_MAX);
}

/* Polls until *word differs from `seen` or the spin time is up: the
   reader thread, polling its socket meanwhile, completes the command
   without a wake-up of this thread.  */
static void
spin_while_unchanged (const unsigned *word, unsigned seen)
{
  uint64_t ns = pocl_remote_spin_ns ();
  if (ns == 0)
    return;
  uint64_t end = pocl_gettimemono_ns () + ns;
  while (__atomic_load_n (word, __ATOMIC_ACQUIRE) == seen
         && pocl_gettimemono_ns () < end)
    pocl_remote_pause ();
}

static void
pocl_remote_join (cl_device_id device, cl_command_queue cq)
{
  remote_queue *rq = (remote_queue *)cq->data;
  pocl_remote_flush_all_held (UINT64_MAX);
  POCL_LOCK_OBJ (cq);
  if (cq->command_count > 0)
    {
      unsigned seen = __atomic_load_n (&rq->idle_count, __ATOMIC_ACQUIRE);
      POCL_UNLOCK_OBJ (cq);
      spin_while_unchanged (&rq->idle_count, seen);
      POCL_LOCK_OBJ (cq);
    }
  while (cq->command_count > 0)
    POCL_WAIT_COND (rq->idle_cond, cq->pocl_lock);
  POCL_UNLOCK_OBJ (cq);
}

static void
pocl_remote_notify_cmdq_finished (cl_command_queue cq)
{
  remote_queue *rq = (remote_queue *)cq->data;
  __atomic_add_fetch (&rq->idle_count, 1, __ATOMIC_RELEASE);
  /* several user threads may wait on one queue */
  POCL_BROADCAST_COND (rq->idle_cond);
}

static void
pocl_remote_wait_event (cl_device_id device, cl_event event)
{
  remote_event *re = (remote_event *)event->data;
  pocl_remote_flush_all_held (UINT64_MAX);
  spin_while_unchanged (&re->finished, 0);
  POCL_LOCK_OBJ (event);
  while (event->status > CL_COMPLETE)
    POCL_WAIT_COND (re->cond, event->pocl_lock);
  POCL_UNLOCK_OBJ (event);
}

static void
pocl_remote_notify_event_finished (cl_event event)
{
  remote_event *re = (remote_event *)event->data;
  if (re)
    {
      __atomic_store_n (&re->finished, 1, __ATOMIC_RELEASE);
      POCL_BROADCAST_COND (re->cond);
    }
}

static void
pocl_remote_free_event_data (cl_event event)
{
  remote_event *re = (remote_event *)event->data;
  if (re == NULL)
    return;
  if (re->svm != NULL)
    pocl_remote_svm_done (re, CL_FAILED);
  pthread_cond_destroy (&re->cond);
  POCL_MEM_FREE (event->data);
}

void
pocl_remote_init_submit_ops (struct pocl_device_ops *ops)
{
  ops->submit = pocl_remote_submit;
  ops->notify = pocl_remote_notify_dep;
  ops->broadcast = pocl_broadcast;
  ops->flush = pocl_remote_flush;
  ops->join = pocl_remote_join;
  ops->wait_event = pocl_remote_wait_event;
  ops->notify_cmdq_finished = pocl_remote_notify_cmdq_finished;
  ops->notify_event_finished = pocl_remote_notify_event_finished;
  ops->free_event_data = pocl_remote_free_event_data;
}
