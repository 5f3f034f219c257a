/* thread_probe.c - what a striped payload's threads cost
   (protocol/pocl_remote_bulk_lanes.c, pocl_remote_workers.c): for 1, 2, 4
   and 7 (POCL_REMOTE_MAX_LANES) threads running an empty job, the median
   over ROUNDS of creating and joining them, against handing the jobs to as
   many kept threads waiting on a condition variable and waiting for them to
   finish.  Each round starts GAP_US after the last (default 200): payloads
   come apart, and a kept thread has gone to sleep by then.

     cc -O2 -o thread_probe tools/bench/thread_probe.c -lpthread
     thread_probe [ROUNDS [GAP_US]]     (default 2000 rounds, 200 us)  */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 7

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

static int
by_value (const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double
median (double *t, int n)
{
  qsort (t, (size_t)n, sizeof (double), by_value);
  return t[n / 2];
}

int
main (int argc, char **argv)
{
  int rounds = argc > 1 ? atoi (argv[1]) : 2000, i, j;
  long gap = argc > 2 ? atol (argv[2]) : 200;
  const int counts[] = { 1, 2, 4, MAX_THREADS };
  struct timespec pause = { gap / 1000000, gap % 1000000 * 1000 };
  double *t = malloc (sizeof (double) * (size_t)(rounds > 0 ? rounds : 1));
  kept k[MAX_THREADS];
  if (rounds < 1 || t == NULL)
    return 1;
  for (j = 0; j < MAX_THREADS; ++j)
    {
      pthread_mutex_init (&k[j].mu, NULL);
      pthread_cond_init (&k[j].cv, NULL);
      k[j].job = k[j].done = k[j].quit = 0;
      pthread_create (&k[j].t, NULL, kept_main, &k[j]);
    }
  for (size_t c = 0; c < sizeof (counts) / sizeof (counts[0]); ++c)
    {
      int n = counts[c];
      pthread_t th[MAX_THREADS];
      for (i = 0; i < rounds; ++i)
        {
          nanosleep (&pause, NULL);
          double t0 = now_us ();
          for (j = 0; j < n; ++j)
            pthread_create (&th[j], NULL, empty, NULL);
          for (j = 0; j < n; ++j)
            pthread_join (th[j], NULL);
          t[i] = now_us () - t0;
        }
      double created = median (t, rounds);
      for (i = 0; i < rounds; ++i)
        {
          nanosleep (&pause, NULL);
          double t0 = now_us ();
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
          t[i] = now_us () - t0;
        }
      printf ("%d threads: create and join %6.1f us, hand to kept threads "
              "%6.1f us (medians, %ld us apart)\n",
              n, created, median (t, rounds), gap);
    }
  for (j = 0; j < MAX_THREADS; ++j)
    {
      pthread_mutex_lock (&k[j].mu);
      k[j].quit = 1;
      pthread_cond_broadcast (&k[j].cv);
      pthread_mutex_unlock (&k[j].mu);
      pthread_join (k[j].t, NULL);
    }
  free (t);
  return 0;
}
