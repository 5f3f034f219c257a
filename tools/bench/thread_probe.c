/* thread_probe.c - what a striped payload's threads cost
   (protocol/pocl_remote_bulk_lanes.c): for 1, 2 and 4 threads running an
   empty job, the mean of ROUNDS of creating and joining them, against
   handing the jobs to as many kept threads waiting on a condition variable
   and waiting for them to finish (the pool doc/pocld.md says was tried).

     cc -O2 -o thread_probe tools/bench/thread_probe.c -lpthread
     thread_probe [ROUNDS]     (default 20000)  */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 4

typedef struct kept
{
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int job, done, quit;
  pthread_t t;
} kept;

static double
now_us (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void *
empty (void *p)
{
  return p;
}

static void *
kept_main (void *p)
{
  kept *k = (kept *)p;
  pthread_mutex_lock (&k->mu);
  for (;;)
    {
      while (!k->job && !k->quit)
        pthread_cond_wait (&k->cv, &k->mu);
      if (k->quit)
        break;
      k->job = 0;
      empty (NULL);
      k->done = 1;
      pthread_cond_broadcast (&k->cv);
    }
  pthread_mutex_unlock (&k->mu);
  return NULL;
}

int
main (int argc, char **argv)
{
  int rounds = argc > 1 ? atoi (argv[1]) : 20000, n, i, j;
  kept k[MAX_THREADS];
  for (j = 0; j < MAX_THREADS; ++j)
    {
      pthread_mutex_init (&k[j].mu, NULL);
      pthread_cond_init (&k[j].cv, NULL);
      k[j].job = k[j].done = k[j].quit = 0;
      pthread_create (&k[j].t, NULL, kept_main, &k[j]);
    }
  for (n = 1; n <= MAX_THREADS; n *= 2)
    {
      pthread_t t[MAX_THREADS];
      double t0 = now_us ();
      for (i = 0; i < rounds; ++i)
        {
          for (j = 0; j < n; ++j)
            pthread_create (&t[j], NULL, empty, NULL);
          for (j = 0; j < n; ++j)
            pthread_join (t[j], NULL);
        }
      double created = (now_us () - t0) / rounds;
      t0 = now_us ();
      for (i = 0; i < rounds; ++i)
        {
          for (j = 0; j < n; ++j)
            {
              pthread_mutex_lock (&k[j].mu);
              k[j].job = 1;
              k[j].done = 0;
              pthread_cond_broadcast (&k[j].cv);
              pthread_mutex_unlock (&k[j].mu);
            }
          for (j = 0; j < n; ++j)
            {
              pthread_mutex_lock (&k[j].mu);
              while (!k[j].done)
                pthread_cond_wait (&k[j].cv, &k[j].mu);
              pthread_mutex_unlock (&k[j].mu);
            }
        }
      printf ("%d threads: create and join %6.1f us, hand to kept threads "
              "%6.1f us\n",
              n, created, (now_us () - t0) / rounds);
    }
  for (j = 0; j < MAX_THREADS; ++j)
    {
      pthread_mutex_lock (&k[j].mu);
      k[j].quit = 1;
      pthread_cond_broadcast (&k[j].cv);
      pthread_mutex_unlock (&k[j].mu);
      pthread_join (k[j].t, NULL);
    }
  return 0;
}
