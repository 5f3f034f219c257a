/* pocl_remote_cpus.c - see pocl_remote_cpus.h.  */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "pocl_remote_cpus.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long
affinity_cpus (void)
{
  long conf = sysconf (_SC_NPROCESSORS_CONF);
  long online = sysconf (_SC_NPROCESSORS_ONLN);
  size_t n = conf > CPU_SETSIZE ? (size_t)conf : CPU_SETSIZE;
  cpu_set_t *set = CPU_ALLOC (n);
  long cpus = online;
  if (set != NULL)
    {
      size_t bytes = CPU_ALLOC_SIZE (n);
      CPU_ZERO_S (bytes, set);
      if (sched_getaffinity (0, bytes, set) == 0)
        cpus = CPU_COUNT_S (bytes, set);
      CPU_FREE (set);
    }
  return cpus > 0 ? cpus : 1;
}

/* CPUs of time a cpu.max file allows ("max PERIOD" or "QUOTA PERIOD"),
   rounded up; LONG_MAX without a limit or a readable file.  */
static long
cpu_max (const char *path)
{
  FILE *f = fopen (path, "r");
  if (f == NULL)
    return LONG_MAX;
  char quota[32];
  long period = 0;
  long cpus = LONG_MAX;
  if (fscanf (f, "%31s %ld", quota, &period) == 2 && period > 0
      && strcmp (quota, "max") != 0)
    {
      char *end;
      long q = strtol (quota, &end, 10);
      if (*end == 0 && q > 0)
        cpus = q / period + (q % period != 0);
    }
  fclose (f);
  return cpus;
}

/* The smallest cpu.max limit of cgroup v2 `cgroup` (NULL: this process's,
   "0::PATH" in /proc/self/cgroup) and the cgroups above it.  */
static long
quota_cpus (const char *root, const char *cgroup)
{
  char rel[4096];
  if (cgroup != NULL)
    snprintf (rel, sizeof (rel), "%s", cgroup);
  else
    {
      FILE *f = fopen ("/proc/self/cgroup", "r");
      if (f == NULL)
        return LONG_MAX;
      char line[sizeof (rel)];
      rel[0] = 0;
      while (fgets (line, sizeof (line), f) != NULL)
        if (strncmp (line, "0::", 3) == 0)
          {
            snprintf (rel, sizeof (rel), "%.*s", (int)strcspn (line + 3, "\n"),
                      line + 3);
            break;
          }
      fclose (f);
      if (rel[0] == 0)
        return LONG_MAX;
    }
  char path[sizeof (rel) + PATH_MAX];
  long cpus = LONG_MAX;
  for (;;)
    {
      if (snprintf (path, sizeof (path), "%s%s/cpu.max", root, rel)
          < (int)sizeof (path))
        {
          long c = cpu_max (path);
          cpus = c < cpus ? c : cpus;
        }
      char *slash = strrchr (rel, '/');
      if (slash == NULL || rel[0] == 0)
        break;
      *slash = 0;
    }
  return cpus;
}

long
pocl_remote_usable_cpus_under (const char *cgroup_root, const char *cgroup)
{
  long cpus = affinity_cpus ();
  long quota = quota_cpus (cgroup_root, cgroup);
  return quota < cpus ? quota : cpus;
}

long
pocl_remote_usable_cpus (void)
{
  static long cached = 0;
  long v = __atomic_load_n (&cached, __ATOMIC_RELAXED);
  if (v == 0)
    {
      /* threads racing on the first call compute the same */
      v = pocl_remote_usable_cpus_under ("/sys/fs/cgroup", NULL);
      __atomic_store_n (&cached, v, __ATOMIC_RELAXED);
    }
  return v;
}
