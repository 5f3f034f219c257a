/* remote.h - the remote driver's own state and functions: the ops layer
   above the channel (channel/remote_channel.h), whose sessions, messages
   and in-flight table it uses.  README.md maps the files; reading order
   for a newcomer: remote.c (device ops), remote_submit.c (an enqueued
   command leaves with its wait list; completions), remote_commands.c
   (each command as a wire message), remote_program.c (builds, kernel
   metadata), then the channel.  */

#ifndef POCL_REMOTE_INTERNAL_H
#define POCL_REMOTE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "channel/remote_channel.h"
#include "pocl_cl.h"

#define REMOTE_FOREIGN_IDS 4
/* vendors' queries a device remembers the server did not answer */
#define POCL_REMOTE_MAX_ABSENT_INFO 32
/* the longest CL_DEVICE_OPENCL_C_VERSION rewritten to OpenCL C 1.2 */
#define POCL_REMOTE_MAX_C_VERSION 256

typedef struct remote_event remote_event;

/* A command queue's driver data (cl_command_queue->data).  */
typedef struct remote_queue
{
  /* the session that has it: PoCL may free the queue's context before the
     queue itself */
  remote_server *server;
  pthread_cond_t idle_cond; /* clFinish waiters */
  /* times the queue became idle (atomic): what a waiting thread's spin
     reads, since PoCL changes command_count under the queue's lock */
  unsigned idle_count;
} remote_queue;

/* Per-device driver data.  */
typedef struct remote_device_data
{
  remote_server *server;
  uint32_t server_device; /* device index on the server */
  uint32_t platform;      /* the server's platform index of the device */
  char *build_hash;
  /* every DEVICE_INFO entry as received, clGetDeviceInfo's answers; grown
     by queries asked later, under info_lock */
  char *info;
  uint64_t info_len;
  pthread_mutex_t info_lock;
  /* queries the server did not answer when asked */
  cl_device_info absent[POCL_REMOTE_MAX_ABSENT_INFO];
  unsigned num_absent;
  /* put before every source sent (pocl_remote_source_prefix), or NULL */
  char *source_prefix;
  /* a hidden OpenCL C feature: OpenCL C 1.2 is the highest full version */
  int c_version_cut;
  /* SPIR-V served: the server's device takes it */
  int il;
  /* USM served (dev->usm_caps): the server's device has it, or SVM */
  int usm;
} remote_device_data;

/* Per-command driver data, hung on cl_event->data.  */
struct remote_event
{
  /* First: the channel hands it back.  Its dep_failed also fails the
     command, with CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, whatever
     the server's runtime made of it (as a local device,
     pocl_remote_notify_dep).  */
  remote_inflight inflight;
  cl_event event;
  remote_server *server; /* the server that completes it */
  /* the server that received its wait list: `server`, except for a
     migration between servers, whose waits go with the PUSH */
  remote_server *wait_server;
  pthread_cond_t cond; /* clWaitForEvents waiters */
  /* set (atomically) once PoCL finished the event: what a waiting thread's
     spin reads, since PoCL writes the status under the event's lock */
  unsigned finished;
  /* set after the command went out: later commands may then name it as a
     SAME_SERVER dependency (atomic: read by other threads' submits) */
  int sent;
  /* dependencies sent as FOREIGN: their completion must be forwarded; past
     REMOTE_FOREIGN_IDS every completion is */
  unsigned num_foreign;
  uint64_t foreign[REMOTE_FOREIGN_IDS];
  /* a host-to-device migration held until its dependencies are done: they
     may still be bringing mem_host_ptr up to date */
  _cl_command_node *held;
  /* clEnqueueMigrateMemObjects' own command, completed by the client when
     its dependencies are (see local_noop) */
  int local;
  /* marked CL_RUNNING under a dependency's lock: its CL_RUNNING callbacks
     are called with the completion (mark_running) */
  int running_callbacks_owed;
  /* SVM work left for the completion (remote_svm.c), or NULL */
  struct remote_svm_op *svm;
  /* a migration that brings a buffer's content: if it fails, the content
     is lost (mark_lost) */
  int moves_content;
  /* the server's completion, held while dependencies are still pending */
  int deferred;
  pocl_remote_completion completion;
  remote_event *deferred_next;
};

/* The remote_event that holds f.  */
static inline remote_event *
remote_event_of (remote_inflight *f)
{
  return (remote_event *)((char *)f - offsetof (remote_event, inflight));
}

/* The session that serves ctx's objects on dev, or NULL when they were a
   dead session's (ctx is older than the device's session): the new
   session must not hear of them.  */
static inline remote_server *
pocl_remote_session_for (cl_device_id dev, cl_context ctx)
{
  remote_server *s = __atomic_load_n (
      &((remote_device_data *)dev->data)->server, __ATOMIC_ACQUIRE);
  return ctx->id < s->epoch ? NULL : s;
}

/* The id of an object on the server: PoCL's object id, with the server's
   device index in the low byte, since each client device of one server
   has its own server objects (buffers, programs, kernels, samplers).  */
static inline uint64_t
pocl_remote_wire_id (uint64_t object_id, cl_device_id dev)
{
  return (object_id << 8) | ((remote_device_data *)dev->data)->server_device;
}

/* remote_commands.c: a command as its message: 0, -1 (connection lost)
   or -2 (not supported) */
int pocl_remote_send_command (remote_server *s, _cl_command_node *node,
                              remote_event *re, pocl_remote_cmd *c,
                              struct iovec *waits);

/* remote_encode.c: shared by the encoders */
/* One memory command, its data inline or on the data socket; `packed`:
   data is a temporary copy (the replay log copies it).  */
int pocl_remote_send_mem (remote_server *s, uint32_t type, remote_event *re,
                          pocl_remote_mem_cmd *m, struct iovec *waits,
                          const void *data, size_t data_size, int packed);
int pocl_remote_send_marker (remote_server *s, remote_event *re,
                             pocl_remote_cmd *c, struct iovec *waits,
                             int barrier);
/* The default queue of `dev` in mem's context, or NULL.  */
cl_command_queue pocl_remote_default_queue (cl_mem mem, cl_device_id dev);
/* The queue a command runs on: for a read served by the device that holds
   the buffer's latest content (command.read.src_device), that device's
   default queue; else cq.  */
cl_command_queue pocl_remote_exec_queue (_cl_command_node *node,
                                         cl_command_queue cq);
/* The server a migration's waits go to: the source of a migration between
   two linked servers, else the command's own.  */
remote_server *pocl_remote_wait_server (_cl_command_node *node,
                                        remote_server *own);
/* Whether `mem` has a content-size buffer allocated on `dev`, whose wire id
   then goes to *size_id.  */
int pocl_remote_content_size_id (cl_mem mem, cl_device_id dev,
                                 uint64_t *size_id);

int pocl_remote_pack_ndrange (_cl_command_node *node, cl_device_id dev,
                              pocl_remote_ndrange *b,
                              char *stack, size_t stack_size, char **args,
                              size_t *size);

/* remote_cmdbuf.c: command buffers made once on the server, and run by one
   message each */
cl_int pocl_remote_create_finalized_command_buffer (cl_device_id dev,
                                                    cl_command_buffer_khr cb);
cl_int pocl_remote_free_command_buffer (cl_device_id dev,
                                        cl_command_buffer_khr cb);
/* the op run_command_buffer: CL_SUCCESS where the server has the buffer */
cl_int pocl_remote_command_buffer_taken (void *dev, cl_command_buffer_khr cb);

/* remote_svm.c */
/* live fine-grained SVM allocations (atomic): launches carry them */
extern unsigned pocl_remote_svm_fine;
/* SVM as the server's device offers it (CL_DEVICE_SVM_CAPABILITIES) */
void pocl_remote_svm_setup (cl_device_id dev);
void pocl_remote_init_svm_ops (struct pocl_device_ops *ops);
/* Whether the command carries host memory that fine-grained SVM may be:
   then it leaves once its dependencies are done.  */
static inline int
pocl_remote_svm_holds_back (_cl_command_node *node)
{
  return __atomic_load_n (&pocl_remote_svm_fine, __ATOMIC_RELAXED)
         && (node->type == CL_COMMAND_NDRANGE_KERNEL
             || node->type == CL_COMMAND_TASK
             || node->type == CL_COMMAND_SVM_MEMCPY);
}
/* Asks the server for mem's buffer (asynchronously).  On SVM memory (a
   CL_MEM_USE_HOST_PTR buffer inside an allocation) the server's buffer is
   that memory, whose content the device has already: returns 1 then.  */
int pocl_remote_create_buffer_on (remote_server *s, cl_device_id dev,
                                  cl_mem mem, cl_mem_flags access);
/* Whether [p, p + n) lies in one SVM allocation of session s.  */
int pocl_remote_svm_holds (remote_server *s, const void *p, size_t n);
int pocl_remote_svm_command (remote_server *s, _cl_command_node *node,
                             remote_event *re, pocl_remote_mem_cmd *m,
                             struct iovec *waits);
int pocl_remote_svm_send_ndrange (remote_server *s, remote_event *re,
                                  pocl_remote_ndrange *b, struct iovec *iov2);
/* Does what re->svm left for the completion (status: the command's) and
   frees it.  */
void pocl_remote_svm_done (remote_event *re, cl_int status);

/* remote_usm_host.c: the host's access to USM device allocations of a
   CPU device.  add serves [addr, addr + span) (mapped read-write, the
   allocation's `size` bytes on server s) from the server: 0, or -1 when it
   cannot.  remove stops it, before the range is unmapped.  */
int pocl_remote_usm_host_add (remote_server *s, void *addr, size_t size,
                              size_t span);
void pocl_remote_usm_host_remove (void *addr);
/* Whether [p, p + n) or [p2, p2 + n2) meets such a range (NULL: no
   range); one lock for both.  */
int pocl_remote_usm_host_holds (const void *p, size_t n, const void *p2,
                                size_t n2);
/* Whether [p, p + n) lies in one such allocation of server s.  */
int pocl_remote_usm_host_within (remote_server *s, const void *p, size_t n);
/* the handler before_send: writes back what the host changed */
void pocl_remote_usm_host_flush (remote_server *s);

/* remote_submit.c: the channel's handlers (remote_channel_handlers),
   registered by remote.c.  A command's completion: */
void pocl_remote_complete (remote_server *s, remote_inflight *f,
                           const pocl_remote_completion *c);
/* Completions that arrived before those of their dependencies (native
   callbacks of one server race, two sockets and two servers reorder) are
   held, and completed by a reader once the dependencies are: after each
   message.  */
void pocl_remote_complete_deferred (void);
/* Marks the thread a reader, which completes the held completions.  */
void pocl_remote_reader_thread_started (void);

/* remote_includes.c: the files `source` includes from this client's
   directories (its working directory and the -I of `options` that exist
   here), packed for BUILD_PROGRAM (*count files, *packed malloc'd).  */
int pocl_remote_pack_includes (const char *source, const char *options,
                               char **packed, size_t *packed_len,
                               uint32_t *count);

/* remote_devinfo.c: a DEVICE_INFO reply applied to the device (its name,
   from CL_DEVICE_NAME, in *name), the partitioning it offers, the server's
   value of an entry, and the device op get_device_info_first.  */
void pocl_remote_apply_device_info (cl_device_id dev, const char *p,
                                    uint64_t len, char **name);
void pocl_remote_set_partitioning (cl_device_id dev);
cl_int pocl_remote_server_info (cl_device_id dev, cl_device_info param,
                                size_t param_value_size, void *param_value,
                                size_t *param_value_size_ret);
cl_int pocl_remote_get_device_info_first (cl_device_id dev,
                                          cl_device_info param,
                                          size_t param_value_size,
                                          void *param_value,
                                          size_t *param_value_size_ret);
/* remote_features.c: what of the server's device is advertised */
/* served: what the remote device serves of the extensions whose API it
   forwards where the server's device allows (remote_devinfo.c) */
#define POCL_REMOTE_SERVES_IL 1u  /* SPIR-V: cl_khr_il_program */
#define POCL_REMOTE_SERVES_USM 2u /* cl_intel_unified_shared_memory */
int pocl_remote_extension_served (const char *name, size_t len,
                                  unsigned served);
char *pocl_remote_filter_extensions (const char *server, unsigned served);
size_t pocl_remote_filter_name_versions (cl_name_version *a, size_t n,
                                         int features, unsigned served);
int pocl_remote_query_hidden (cl_device_info param);
int pocl_remote_query_zeroed (cl_device_id dev, cl_device_info param);
char *pocl_remote_source_prefix (const char *server,
                                 const cl_name_version *features,
                                 size_t num_features, unsigned served);
/* remote_program.c: the server device's built-in kernels
   (CL_DEVICE_BUILT_IN_KERNELS and ..._WITH_VERSION) */
void pocl_remote_setup_builtins (cl_device_id dev);

/* remote_discovered.c: the devices of servers found by DNS-SD, numbered
   from `named` on (the probe's count), and the address of device j as
   POCL_REMOTE<j>_PARAMETERS would give it; NULL for a named device.  */
unsigned pocl_remote_discovered_probe (unsigned named);
const char *pocl_remote_discovered_params (unsigned j);

/* remote_submit.c, remote_program.c: fill their part of the ops table */
void pocl_remote_init_submit_ops (struct pocl_device_ops *ops);
void pocl_remote_init_program_ops (struct pocl_device_ops *ops);

#endif
