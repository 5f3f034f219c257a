/* remote_submit.c - the command path: each enqueued command leaves for pocld
   at once, from the application's own thread, with its wait list; pocld
   resolves the dependencies and answers with one COMPLETION.  */

#include <string.h>
#include <unistd.h>

#include "common.h"
#include "pocl_runtime_config.h"
#include "pocl_timing.h"
#include "pocl_util.h"
#include "remote.h"
#include "utlist.h"

/* Commands with more waits than this build their wait list on the heap.  */
#define STACK_WAITS 32

static remote_event *
new_remote_event (cl_event e, remote_server *s)
{
  remote_event *re = calloc (1, sizeof (remote_event));
  if (re == NULL)
    return NULL;
  re->id = e->id;
  re->event = e;
  re->server = s;
  pthread_cond_init (&re->cond, NULL);
  e->data = re;
  return re;
}

/* Fills w with e's pending dependencies.  A dependency on a command this
   server already received is resolved there natively; anything else (user
   events, other devices, a command still being sent by another thread) is
   FOREIGN and announced later by pocl_remote_notify.  */
static uint32_t
build_waits (cl_event e, remote_server *s, pocl_remote_wait *w)
{
  cl_command_queue cq = e->queue;
  int in_order = !(cq->properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  uint32_t n = 0;
  event_node *node;
  LL_FOREACH (e->wait_list, node)
  {
    cl_event dep = node->event;
    remote_event *dre = (remote_event *)dep->data;
    int same_server = dep->queue && dep->queue->device->ops == cq->device->ops
                      && dre && dre->server == s
                      && __atomic_load_n (&dre->sent, __ATOMIC_ACQUIRE);
    /* the server's queue is in order too */
    if (same_server && in_order && dep->queue == cq)
      continue;
    w[n].event_id = dep->id;
    w[n].origin = same_server ? POCL_REMOTE_WAIT_SAME_SERVER
                              : POCL_REMOTE_WAIT_FOREIGN;
    if (!same_server)
      {
        remote_event *re = (remote_event *)e->data;
        if (re->num_foreign < REMOTE_FOREIGN_IDS)
          re->foreign[re->num_foreign] = dep->id;
        re->num_foreign++;
      }
    w[n].reserved = 0;
    ++n;
  }
  return n;
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

static void
fail_event (remote_server *s, remote_event *re, cl_int status)
{
  /* the loss handler may have taken it already */
  if (pocl_remote_event_take (s, re->id) != re)
    return;
  pocl_remote_completion c;
  memset (&c, 0, sizeof (c));
  c.status = status;
  pocl_remote_complete (s, re, &c);
}

static void
pocl_remote_submit (_cl_command_node *node, cl_command_queue cq)
{
  cl_event e = node->sync.event.event;
  remote_device_data *d = (remote_device_data *)cq->device->data;
  remote_server *s = d->server;
  pocl_remote_wait stack_waits[STACK_WAITS];
  pocl_remote_wait *w = stack_waits;
  int r;

  remote_event *re = new_remote_event (e, s);
  uint32_t max_waits = count_waits (e);
  if (max_waits > STACK_WAITS)
    w = malloc (max_waits * sizeof (pocl_remote_wait));
  if (re == NULL || w == NULL)
    {
      POCL_UNLOCK_OBJ (e);
      pocl_update_event_finished (CL_OUT_OF_HOST_MEMORY, __func__, __LINE__, e,
                                  NULL);
      return;
    }

  pocl_remote_cmd c;
  c.queue_id = cq->id;
  c.num_waits = build_waits (e, s, w);
  c.flags
      = (cq->properties & CL_QUEUE_PROFILING_ENABLE) ? POCL_RCMD_PROFILING : 0;
  struct iovec waits = { w, c.num_waits * sizeof (pocl_remote_wait) };

  node->ready = 1;
  pocl_update_event_submitted (e);
  pocl_remote_event_insert (s, re);
  r = s->dead ? -1 : pocl_remote_send_command (s, node, re, &c, &waits);
  __atomic_store_n (&re->sent, 1, __ATOMIC_RELEASE);
  POCL_UNLOCK_OBJ (e);

  if (w != stack_waits)
    free (w);
  if (r)
    fail_event (s, re,
                r == -2 ? CL_INVALID_OPERATION : CL_DEVICE_NOT_AVAILABLE);
}

/* A completion from the server (or a failure made up locally).  Runs on a
   reader thread.  */
void
pocl_remote_complete (remote_server *s, remote_event *re,
                      const pocl_remote_completion *c)
{
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
  pocl_update_event_running_unlocked (e);
  POCL_UNLOCK_OBJ (e);

  if (c->status == CL_COMPLETE)
    pocl_update_event_complete (__func__, __LINE__, e, "remote command");
  else
    pocl_update_event_finished (c->status < 0 ? c->status : CL_FAILED,
                                __func__, __LINE__, e, NULL);
}

/* finished is one of event's dependencies.  The server learns of foreign
   ones only from us.  */
/* Completes what pocl_remote_notify_dep released; called by the reader
   threads with no locks held.  */
void
pocl_remote_complete_deferred (remote_server *s)
{
  for (;;)
    {
      pthread_mutex_lock (&s->table_lock);
      remote_event *re = s->deferred;
      if (re)
        s->deferred = re->deferred_next;
      pthread_mutex_unlock (&s->table_lock);
      if (re == NULL)
        return;
      pocl_remote_complete (s, re, &re->completion);
    }
}

static void
pocl_remote_notify_dep (cl_device_id device, cl_event event, cl_event finished)
{
  remote_event *re = (remote_event *)event->data;
  unsigned i;

  /* called with both events locked: only queue the held completion */
  if (re && re->deferred && event->wait_list == NULL)
    {
      re->deferred = 0;
      pthread_mutex_lock (&re->server->table_lock);
      re->deferred_next = re->server->deferred;
      re->server->deferred = re;
      pthread_mutex_unlock (&re->server->table_lock);
      return;
    }
  if (re == NULL || !re->sent || re->num_foreign == 0)
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
  pocl_remote_send (re->server, 0, POCL_RMSG_NOTIFY_EVENT, 0, &n, sizeof (n),
                    NULL, 0);
}

static void
pocl_remote_flush (cl_device_id device, cl_command_queue cq)
{
}

/* How long a waiting application thread polls before it sleeps: with a
   completion about one round trip away, this saves the reader thread's
   wake-up of the waiter.  POCL_REMOTE_SPIN_US; pointless on two cores,
   where the spinner would take the CPU the reader and pocld need.  */
static uint64_t
spin_ns (void)
{
  static int64_t ns = -1;
  if (ns < 0)
    {
      long cpus = sysconf (_SC_NPROCESSORS_ONLN);
      ns = 1000
           * (int64_t)pocl_get_int_option ("POCL_REMOTE_SPIN_US",
                                           cpus > 2 ? REMOTE_SPIN_US : 0);
    }
  return (uint64_t)ns;
}

static int
queue_busy (const void *cq)
{
  return __atomic_load_n (&((cl_command_queue)cq)->command_count,
                          __ATOMIC_ACQUIRE)
         > 0;
}

static int
event_pending (const void *e)
{
  return __atomic_load_n (&((cl_event)e)->status, __ATOMIC_ACQUIRE)
         > CL_COMPLETE;
}

/* Polls until pending(obj) is false or the spin time is up.  */
static void
spin_while (int (*pending) (const void *), const void *obj)
{
  uint64_t ns = spin_ns ();
  if (ns == 0)
    return;
  uint64_t end = pocl_gettimemono_ns () + ns;
  while (pending (obj) && pocl_gettimemono_ns () < end)
    {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause ();
#elif defined(__aarch64__)
      __asm__ __volatile__("yield");
#endif
    }
}

static void
pocl_remote_join (cl_device_id device, cl_command_queue cq)
{
  spin_while (queue_busy, cq);
  POCL_LOCK_OBJ (cq);
  while (cq->command_count > 0)
    POCL_WAIT_COND (*(pthread_cond_t *)cq->data, cq->pocl_lock);
  POCL_UNLOCK_OBJ (cq);
}

static void
pocl_remote_notify_cmdq_finished (cl_command_queue cq)
{
  /* several user threads may wait on one queue */
  POCL_BROADCAST_COND (*(pthread_cond_t *)cq->data);
}

static void
pocl_remote_wait_event (cl_device_id device, cl_event event)
{
  remote_event *re = (remote_event *)event->data;
  spin_while (event_pending, event);
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
    POCL_BROADCAST_COND (re->cond);
}

static void
pocl_remote_free_event_data (cl_event event)
{
  remote_event *re = (remote_event *)event->data;
  if (re == NULL)
    return;
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
