/* remote_options.c - the channel's settings that depend on the machine:
   the spin before blocking on a completion, and the scale of options
   (pocl_remote_cpu_option) such as POCL_REMOTE_COALESCE.  */

#include "pocl_remote_cpus.h"
#include "pocl_runtime_config.h"
#include "remote_channel_private.h"

/* Default spin before blocking on a completion, machines of > 2 CPUs
   (pocl_remote_spin_ns): long enough for kernels of a few hundred us (on
   an H100, 400 instead of 50 here and in pocld took 36-72 us off each
   stream kernel of 2^25 doubles; benchmarks.md, "Polling before blocking").
 */
#define REMOTE_SPIN_US 400

int64_t
pocl_remote_cpu_option (int64_t *cached, const char *name, int64_t few_cpus,
                        int64_t more_cpus, int64_t max)
{
  /* computed once; threads racing on the first call compute the same */
  int64_t v = __atomic_load_n (cached, __ATOMIC_RELAXED);
  if (v < 0)
    {
      long cpus = pocl_remote_usable_cpus ();
      v = pocl_get_int_option (name, (int)(cpus > 2 ? more_cpus : few_cpus));
      v = v < 0 ? 0 : v > max ? max : v;
      __atomic_store_n (cached, v, __ATOMIC_RELAXED);
    }
  return v;
}

uint64_t
pocl_remote_spin_ns (void)
{
  static int64_t cached = -1;
  return 1000
         * (uint64_t)pocl_remote_cpu_option (&cached, "POCL_REMOTE_SPIN_US", 0,
                                             REMOTE_SPIN_US, INT32_MAX);
}
