/* pocl_remote_workers.c - the runtime's own threads (pocl_remote_workers.h):
   detached ones that block every signal, and a pool of threads that stay.

   A striped payload needs a thread per lane at both ends.  Made and joined
   for each message, seven of them cost 230 us on the four-H100 host at
   both ends of every striped message, where waking seven parked ones
   costs 37 (doc/benchmarks.md, "Stripe threads that stay"); so the
   threads stay, parked, once their first job is done.  */

#include "pocl_remote_workers.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

typedef struct worker
{
  pthread_cond_t cv;
  void (*fn) (void *); /* the job; NULL while parked */
  void *arg;
  struct worker *next; /* in the parked list */
} worker;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static worker *parked; /* under pool_mu */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A child of fork has none of the parent's threads: it starts with no
   parked worker (their memory is left behind).  */
static void
child_after_fork (void)
{
  pthread_mutex_init (&pool_mu, NULL);
  parked = NULL;
}

static void
register_atfork (void)
{
  pthread_atfork (NULL, NULL, child_after_fork);
}

static void *
worker_main (void *p)
{
  worker *w = (worker *)p;
  pthread_mutex_lock (&pool_mu);
  for (;;)
    {
      while (w->fn == NULL)
        pthread_cond_wait (&w->cv, &pool_mu);
      void (*fn) (void *) = w->fn;
      void *arg = w->arg;
      pthread_mutex_unlock (&pool_mu);
      fn (arg);
      pthread_mutex_lock (&pool_mu);
      w->fn = NULL;
      w->next = parked;
      parked = w;
    }
  return NULL;
}

int
pocl_remote_thread_detached (void *(*fn) (void *), void *arg)
{
  /* No signal of the application's lands on the runtime's threads.  */
  sigset_t all, old;
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  pthread_attr_t a;
  pthread_attr_init (&a);
  pthread_attr_setdetachstate (&a, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int r = pthread_create (&t, &a, fn, arg);
  pthread_attr_destroy (&a);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  return r == 0 ? 0 : -1;
}

int
pocl_remote_worker_run (void (*fn) (void *), void *arg)
{
  pthread_mutex_lock (&pool_mu);
  worker *w = parked;
  if (w != NULL)
    {
      parked = w->next;
      w->fn = fn;
      w->arg = arg;
      pthread_cond_signal (&w->cv);
      pthread_mutex_unlock (&pool_mu);
      return 0;
    }
  pthread_mutex_unlock (&pool_mu);

  pthread_once (&atfork_once, register_atfork);
  w = (worker *)calloc (1, sizeof (*w));
  if (w == NULL)
    return -1;
  pthread_cond_init (&w->cv, NULL);
  w->fn = fn;
  w->arg = arg;
  if (pocl_remote_thread_detached (worker_main, w) != 0)
    {
      pthread_cond_destroy (&w->cv);
      free (w);
      return -1;
    }
  return 0;
}
