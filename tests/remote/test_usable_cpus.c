/* test_usable_cpus.c - protocol/util/pocl_remote_cpus.c: the CPUs that the
   client's and pocld's spinning, completion waiting and lanes are chosen
   by are those of the process's affinity mask and cgroup v2 CPU quota, not
   the machine's.

   Usage: test_usable_cpus WORK_DIR
   1. With the affinity narrowed to one CPU the count is 1; restored, it is
      the mask's (no cgroup root: no quota).
   2. A cgroup tree under WORK_DIR, cgroup /a/b: its cpu.max "50000 100000"
      gives 1, "150000 100000" 2 (or the mask's, if fewer), "max 100000"
      and a malformed line the mask's; its parent's "50000 100000" under
      its own "max" gives 1.
   Prints "usable_cpus: PASS" or "usable_cpus: FAIL: ...".  */

#define _GNU_SOURCE
#include "pocl_remote_cpus.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void
fail (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  printf ("usable_cpus: FAIL: ");
  vprintf (fmt, ap);
  printf ("\n");
  va_end (ap);
  exit (1);
}

static void
expect (const char *root, const char *cgroup, long want, const char *what)
{
  long got = pocl_remote_usable_cpus_under (root, cgroup);
  if (got != want)
    fail ("%s: %ld usable CPUs, expected %ld", what, got, want);
  printf ("usable_cpus: %s: %ld\n", what, got);
}

static void
mkdirs (const char *path)
{
  char p[PATH_MAX];
  snprintf (p, sizeof (p), "%s", path);
  for (char *s = p + 1; *s; ++s)
    if (*s == '/')
      {
        *s = 0;
        if (mkdir (p, 0700) != 0 && errno != EEXIST)
          fail ("mkdir %s: %s", p, strerror (errno));
        *s = '/';
      }
  if (mkdir (p, 0700) != 0 && errno != EEXIST)
    fail ("mkdir %s: %s", p, strerror (errno));
}

static void
put (const char *dir, const char *text)
{
  char path[PATH_MAX];
  snprintf (path, sizeof (path), "%s/cpu.max", dir);
  FILE *f = fopen (path, "w");
  if (f == NULL || fputs (text, f) < 0 || fclose (f) != 0)
    fail ("cannot write %s", path);
}

int
main (int argc, char **argv)
{
  if (argc != 2)
    {
      fprintf (stderr, "usage: test_usable_cpus WORK_DIR\n");
      return 2;
    }
  const char *work = argv[1];
  cpu_set_t mask;
  if (sched_getaffinity (0, sizeof (mask), &mask) != 0)
    fail ("sched_getaffinity: %s", strerror (errno));
  const long all = CPU_COUNT (&mask);
  int first = 0;
  while (!CPU_ISSET (first, &mask))
    ++first;
  cpu_set_t one;
  CPU_ZERO (&one);
  CPU_SET (first, &one);
  if (sched_setaffinity (0, sizeof (one), &one) != 0)
    fail ("sched_setaffinity: %s", strerror (errno));
  expect ("/nonexistent", NULL, 1, "affinity of one CPU");
  if (sched_setaffinity (0, sizeof (mask), &mask) != 0)
    fail ("sched_setaffinity: %s", strerror (errno));
  expect ("/nonexistent", NULL, all, "the whole affinity mask");

  /* cgroup /a/b under WORK_DIR: its own cpu.max, then its parent's */
  char own[PATH_MAX], parent[PATH_MAX];
  snprintf (own, sizeof (own), "%s/a/b", work);
  snprintf (parent, sizeof (parent), "%s/a", work);
  mkdirs (own);
  put (own, "50000 100000\n");
  expect (work, "/a/b", 1, "a quota of half a CPU");
  put (own, "150000 100000\n");
  expect (work, "/a/b", all < 2 ? all : 2, "a quota of 1.5 CPUs");
  put (own, "max 100000\n");
  expect (work, "/a/b", all, "no quota");
  put (own, "lots 100000\n");
  expect (work, "/a/b", all, "a malformed cpu.max");
  put (own, "max 100000\n");
  put (parent, "50000 100000\n");
  expect (work, "/a/b", 1, "a parent's quota of half a CPU");
  printf ("usable_cpus: PASS\n");
  return 0;
}
