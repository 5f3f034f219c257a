/* pocl_remote_workers.h - the runtime's own threads (pocl_remote_workers.c):
   detached ones, and a process-wide pool of threads that stay, for the
   lanes' stripes (pocl_remote_bulk_lanes.c); shared by the client driver
   and pocld.  */

#ifndef POCL_REMOTE_WORKERS_H
#define POCL_REMOTE_WORKERS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Starts fn (arg) in a detached thread with every signal blocked: 0, or
   -1.  */
int pocl_remote_thread_detached (void *(*fn) (void *), void *arg);

/* Runs fn (arg) in a thread of its own: a parked worker, else a new one
   that parks once fn returns.  0, or -1 if no thread could be had (the
   caller runs the job itself).  fn must let its caller know that it is
   done; its thread blocks every signal.  */
int pocl_remote_worker_run (void (*fn) (void *), void *arg);

#ifdef __cplusplus
}
#endif

#endif
