/* pocl_remote_trace_clock.c - see pocl_remote_trace_clock.h.  */

#include "pocl_remote_trace_clock.h"

#include <stdio.h>
#include <string.h>

void
pocl_remote_trace_clock (char boot_id[POCL_REMOTE_BOOT_ID_LEN + 1],
                         int64_t *monotonic_offset_ns)
{
  boot_id[0] = 0;
  *monotonic_offset_ns = 0;
  FILE *f = fopen ("/proc/sys/kernel/random/boot_id", "r");
  if (f != NULL)
    {
      if (fgets (boot_id, POCL_REMOTE_BOOT_ID_LEN + 1, f) == NULL
          || strlen (boot_id) != POCL_REMOTE_BOOT_ID_LEN
          || strspn (boot_id, "0123456789abcdef-") != POCL_REMOTE_BOOT_ID_LEN)
        boot_id[0] = 0;
      fclose (f);
    }
  /* Lines "<clock> <seconds> <nanoseconds>"; the clock by name, or by
     number (CLOCK_MONOTONIC is 1).  */
  f = fopen ("/proc/self/timens_offsets", "r");
  if (f != NULL)
    {
      char clock[32];
      long long s, ns;
      while (fscanf (f, "%31s %lld %lld", clock, &s, &ns) == 3)
        if (strcmp (clock, "monotonic") == 0 || strcmp (clock, "1") == 0)
          *monotonic_offset_ns = s * 1000000000LL + ns;
      fclose (f);
    }
}
