/* pocl_remote_trace_clock.h - which CLOCK_MONOTONIC a process's trace
   timestamps are on (doc/tracing.md, "Clocks"): the processes of one boot
   of one host share it, less the offsets of their time namespaces, and
   tools/trace_merge.py then aligns their traces exactly instead of by a
   measured offset.  Shared by the client driver and pocld.  */

#ifndef POCL_REMOTE_TRACE_CLOCK_H
#define POCL_REMOTE_TRACE_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POCL_REMOTE_BOOT_ID_LEN 36

/* This host's boot id (POCL_REMOTE_BOOT_ID_LEN characters, "" if unknown)
   and this process's time-namespace offset of CLOCK_MONOTONIC (0 without
   one).  */
void pocl_remote_trace_clock (char boot_id[POCL_REMOTE_BOOT_ID_LEN + 1],
                              int64_t *monotonic_offset_ns);

#ifdef __cplusplus
}
#endif

#endif
