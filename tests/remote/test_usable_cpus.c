/* test_usable_cpus.c - protocol/pocl_remote_cpus.c: the CPUs that the
   client's and pocld's spinning, completion waiting and lanes are chosen
   by are those of the process's affinity mask and cgroup v2 CPU quota, not
   the machine's.

   Usage: test_usable_cpus WORK_DIR
   1. With the affinity narrowed to one CPU the count is 1; restored, it is
      the mask's (no cgroup root: no quota).
   2. A cgroup tree under WORK_DIR at this process's own cgroup path (from
      /proc/self/cgroup): cpu.max "50000 100000" gives 1, "150000 100000"
      2 (or the mask's, if fewer), "max 100000" and a malformed line the
   mask's; a parent's "50000 100000" under the own "max" gives 1. Prints
   "usable_cpus: PASS" or "usable_cpus: FAIL: ...".  */

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
expect (const char *root, long want, const char *what)
{
  long got = pocl_remote_usable_cpus_under (root);
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
  expect ("/nonexistent", 1, "affinity of one CPU");
  if (sched_setaffinity (0, sizeof (mask), &mask) != 0)
    fail ("sched_setaffinity: %s", strerror (errno));
  expect ("/nonexistent", all, "the whole affinity mask");

  char line[4096] = "";
  FILE *f = fopen ("/proc/self/cgroup", "r");
  while (f != NULL && fgets (line, sizeof (line), f) != NULL
         && strncmp (line, "0::", 3) != 0)
    line[0] = 0;
  if (f != NULL)
    fclose (f);
  if (strncmp (line, "0::", 3) != 0)
    {
      printf ("usable_cpus: no cgroup v2 here: quota not checked\n");
      printf ("usable_cpus: PASS\n");
      return 0;
    }
  char *rel = line + 3;
  rel[strcspn (rel, "\n")] = 0;
  char own[PATH_MAX], parent[PATH_MAX];
  snprintf (own, sizeof (own), "%s%s", work, rel);
  mkdirs (own);
  put (own, "50000 100000\n");
  expect (work, 1, "a quota of half a CPU");
  put (own, "150000 100000\n");
  expect (work, all < 2 ? all : 2, "a quota of 1.5 CPUs");
  put (own, "max 100000\n");
  expect (work, all, "no quota");
  put (own, "lots 100000\n");
  expect (work, all, "a malformed cpu.max");
  char *slash = strrchr (rel, '/');
  if (slash != NULL && slash != rel)
    {
      *slash = 0;
      snprintf (parent, sizeof (parent), "%s%s", work, rel);
      put (own, "max 100000\n");
      put (parent, "50000 100000\n");
      expect (work, 1, "a parent's quota of half a CPU");
    }
  else
    printf ("usable_cpus: in the root cgroup: no parent quota checked\n");
  printf ("usable_cpus: PASS\n");
  return 0;
}
