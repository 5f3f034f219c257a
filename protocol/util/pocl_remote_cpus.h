/* pocl_remote_cpus.h - how many CPUs this process may use, for the choices
   made by the number of CPUs (spinning before blocking, completions waited
   for, lanes).  The online count is not it: under `taskset -c 0` or in a
   container limited to one CPU, the client's spinning reader took the one
   CPU from the thread it waited for, and a no-op kernel cost 816-821 us,
   an EEVDF time slice, instead of 43-44 (doc/benchmarks.md, "The CPUs a
   process may use").  Shared by the client driver and pocld.  */

#ifndef POCL_REMOTE_CPUS_H
#define POCL_REMOTE_CPUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The CPUs of this process's affinity mask, fewer where cgroup v2's
   cpu.max of `cgroup` (a path like "/a/b"; NULL: this process's cgroup)
   or of one above it, under cgroup_root (normally "/sys/fs/cgroup"),
   allows less time than that (a quota of 1.5 periods: 2); at least 1.  */
long pocl_remote_usable_cpus_under (const char *cgroup_root,
                                    const char *cgroup);

/* The same for this process's cgroup under /sys/fs/cgroup, computed
   once.  */
long pocl_remote_usable_cpus (void);

#ifdef __cplusplus
}
#endif

#endif
