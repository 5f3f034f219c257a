/* remote.h - declarations shared by the files of the remote driver.

   Reading order for a newcomer: remote.c (device ops, device info),
   remote_submit.c (an enqueued command leaves with its wait list;
   completions), remote_commands.c (each command as a wire message),
   remote_conn.c (message I/O, requests), remote_reader.c (the reader
   threads), remote_session.c (connecting, the server registry),
   remote_program.c (builds, kernel metadata).  How the bytes travel is
   remote_transport.h's (doc/protocol.md, "Transports").  */

#ifndef POCL_REMOTE_INTERNAL_H
#define POCL_REMOTE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "pocl_cl.h"
#include "pocl_remote_protocol.h"
#include "remote_transport.h"

/* Buckets of the in-flight command table; a power of two.  */
#define REMOTE_EVENT_BUCKETS 1024
#define REMOTE_FOREIGN_IDS 4
/* vendors' queries a device remembers the server did not answer */
#define POCL_REMOTE_MAX_ABSENT_INFO 32
/* the longest CL_DEVICE_OPENCL_C_VERSION rewritten to OpenCL C 1.2 */
#define POCL_REMOTE_MAX_C_VERSION 256
/* Default spin before blocking on a completion, machines of > 2 CPUs
   (pocl_remote_spin_ns): long enough for kernels of a few hundred us (on
   an H100, 400 instead of 50 here and in pocld took 36-72 us off each
   stream kernel of 2^25 doubles; benchmarks.md, "Polling before blocking").  */
#define REMOTE_SPIN_US 400

typedef struct remote_request remote_request;
typedef struct remote_event remote_event;
typedef struct remote_server remote_server;
typedef struct remote_inflight remote_inflight;

/* A synchronous request waiting for its REPLY.  */
struct remote_request
{
  uint64_t id;
  int done;
  int detached; /* nobody waits: the reader frees it */
  remote_server *link; /* CONNECT_PEER: the peer, linked on success */
  uint32_t type;
  cl_int status;
  void *payload;
  uint64_t payload_size;
  remote_request *next;
};

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

/* A sent message kept for a resume until the server acknowledges it
   (doc/reconnect.md): header, then `copied` bytes (body and the payload
   pieces that were copied), then `nref` pieces of application memory that
   stays valid until the command completes (a command the server has not
   handled has not completed).  */
#define REMOTE_LOG_INLINE 448
typedef struct remote_log_entry
{
  pocl_remote_hdr hdr;
  size_t copied;
  char *heap; /* the copied bytes when they do not fit `inl` */
  int nref;
  struct iovec ref[6];
  char inl[REMOTE_LOG_INLINE];
} remote_log_entry;

/* Entries first..next-1 (message counts, from 1) at ring[seq & (cap-1)].  */
typedef struct remote_log
{
  remote_log_entry *ring;
  uint64_t cap, first, next;
} remote_log;

/* One connection (a command socket and a data socket) to one pocld.  All the
   client devices that name the same host:port share it.  */
struct remote_server
{
  char *host;
  uint16_t port;
  /* The client's number for this server (order of connection): servers
     know each other by it on peer links.  */
  uint32_t index;
  /* where the other servers reach this one: #peer_address, or host:P+2 */
  char *peer_host;
  uint16_t peer_port;
  /* bit i: a peer link to server i is up; set under the servers lock, read
     lock-free on the command path, hence atomic */
  uint64_t peers;
  /* bit i: a CONNECT_PEER to server i awaits its reply (servers lock) */
  uint64_t linking;
  /* bytes this client sent and received on the server's sockets, and bytes
     the server reported receiving from peers for migrations */
  uint64_t bytes_sent, bytes_received, peer_bytes;
  /* The command and data links (protocol/pocl_remote_link.h), of
     `transport`; replaced by a resume once no reader runs.  */
  const remote_transport *transport;
  pocl_remote_link cmd, data;
  /* How large payloads move on the data link (protocol/pocl_remote_bulk.h),
     of `bulk_transport`; with lanes, bulk.state is `lanes`, which
     remote_lanes.c opens in the background; with UCX (remote_ucx.c) it is
     `ucx`, over the lanes or inline.  */
  const remote_bulk_transport *bulk_transport;
  pocl_remote_bulk bulk;
  pocl_remote_lanes lanes;
  pocl_remote_ucx_bulk ucx;
  int ucx_offer; /* the data link's UCX offer is due (remote_ucx.c) */
  uint8_t session_id[16];
  uint32_t num_devices;
  /* server CLOCK_REALTIME ns minus client monotonic ns */
  int64_t clock_offset_ns;

  /* Each sender writes a whole message under its socket's lock, which also
     guards the socket's replay log.  */
  pthread_mutex_t cmd_send_lock;
  pthread_mutex_t data_send_lock;
  remote_log log[2]; /* [0]: command socket, [1]: data socket */
  /* the first message of the command log held back (remote_coalesce.c),
     0 if none (written under cmd_send_lock, atomic), and when the last
     command was logged */
  uint64_t held_from;
  uint64_t held_since, last_cmd_ns;
  /* The server's counts of our messages from its last ACK, and our counts
     of its messages (reader threads), as in pocl_remote_hello.  Atomic.  */
  uint64_t acked[2];
  uint64_t seen[2];
  uint64_t seen_at_last_ack; /* seen[0] + seen[1] when we last sent one */
  uint64_t payload_since_ack;
  int ack_due; /* an ACK goes with the next command (atomic) */
  /* set while the connections are broken and a reconnect thread resumes
     the session: senders only log (atomic) */
  int down;
  int rebroken; /* a reader failed while `down` was set (atomic) */
  int leaving;  /* BYE sent: the application exits (atomic) */
  int readers;  /* reader threads running (table_lock) */
  pid_t pid;    /* the process that connected: only it says BYE */
  /* Held across a WRITE* and its DATA: pocld matches DATA to the writes in
     command order, and writes leave from several threads (held migrations
     go out from reader threads).  */
  pthread_mutex_t data_order_lock;

  /* Synchronous requests waiting for a REPLY, and in-flight commands
     waiting for a COMPLETION.  */
  pthread_mutex_t table_lock;
  pthread_cond_t reply_cond;
  remote_request *requests;
  uint64_t next_request_id;
  remote_inflight *events[REMOTE_EVENT_BUCKETS];
  uint64_t in_flight; /* commands in `events` (atomic) */

  /* Contexts with a lower id belong to the dead session this one replaced
     (pocl_remote_session_for); 0 for the first session.  */
  uint64_t epoch;
  /* the newest context that has used this session (atomic): a session
     renewed outside clCreateContext serves only newer ones */
  uint64_t newest_context;

  /* set once the session is lost for good (no resume within the time
     limit, a refused resume, a protocol error); then every waiter gets an
     error.  Read lock-free on the command path: only through
     pocl_remote_dead.  */
  int dead;

  struct remote_server *next;
};

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
} remote_device_data;

/* A command in flight, as the channel knows it: its id in the in-flight
   table, and where a READ's completion payload lands.  The driver's
   remote_event holds one.  */
typedef struct remote_inflight
{
  uint64_t id;
  struct remote_inflight *hash_next;
  /* where a READ's completion payload goes */
  void *dst;
  uint64_t dst_size;
  /* for rect reads: unpack the packed region into dst with these pitches */
  int unpack;
  size_t region[3];
  size_t row_pitch, slice_pitch;
  /* a content-size read: the server may send fewer than dst_size bytes */
  int partial;
  /* a large read's data comes in READ_DATA parts: bytes in so far, and the
     total the parts announce */
  uint64_t received, total;
  /* a dependency failed (set by the driver, atomic): a read's payload is
     dropped, the application's memory stays as it was */
  int dep_failed;
} remote_inflight;

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

/* remote_session.c */
remote_server *pocl_remote_server_get (const char *host, uint16_t port,
                                       const char *peer_host,
                                       uint16_t peer_port, cl_int *err);
/* A new session with the server of a dead one, which it replaces in the
   registry; `epoch`: the oldest context id it serves.  NULL on failure.  */
remote_server *pocl_remote_server_renew (remote_server *old, uint64_t epoch,
                                         cl_int *err);
void pocl_remote_peer_link (remote_server *a, remote_server *b);
/* The reply to a CONNECT_PEER of a to b.  */
void pocl_remote_peer_linked (remote_server *a, remote_server *b,
                              cl_int status);

/* remote_conn.c */
int pocl_remote_send (remote_server *s, int data_socket, uint32_t type,
                      uint64_t id, const void *body, size_t body_size,
                      const struct iovec *payload, int payload_count);
/* As pocl_remote_send, but payload pieces from index `stable_from` on are
   application memory valid until the command completes: the replay log
   references them instead of copying.  */
int pocl_remote_send_ref (remote_server *s, int data_socket, uint32_t type,
                          uint64_t id, const void *body, size_t body_size,
                          const struct iovec *payload, int payload_count,
                          int stable_from);
cl_int pocl_remote_request (remote_server *s, uint32_t type, const void *body,
                            size_t body_size, const struct iovec *payload,
                            int payload_count, void **reply,
                            uint64_t *reply_size);
void pocl_remote_request_async (remote_server *s, uint32_t type,
                                const void *body, size_t body_size,
                                const struct iovec *payload,
                                int payload_count);
void pocl_remote_event_insert (remote_server *s, remote_inflight *f);
remote_inflight *pocl_remote_event_take (remote_server *s, uint64_t id);
uint64_t pocl_remote_server_to_client_time (remote_server *s, uint64_t ts);
void pocl_remote_server_lost (remote_server *s);

/* What the channel tells the driver, registered once before the first
   session (pocl_remote_channel_setup): the channel calls no driver function
   but these.  */
typedef struct remote_channel_handlers
{
  /* A reader thread starts, before its first message.  */
  void (*reader_started) (void);
  /* A command's completion (c from the server, or a failure the channel
     made up): on a reader thread, or the thread that found the session
     lost.  */
  void (*complete) (remote_server *s, remote_inflight *f,
                    const pocl_remote_completion *c);
  /* After each message a reader handled, and after each command that a
     lost session failed; no locks held.  */
  void (*after_message) (void);
  /* The session is lost for good, its commands about to fail.  */
  void (*server_lost) (remote_server *s);
} remote_channel_handlers;
void pocl_remote_channel_setup (const remote_channel_handlers *h);
/* The registered handlers (a copy: one load to each call).  */
extern remote_channel_handlers pocl_remote_handlers;
static inline int
pocl_remote_linked (const remote_server *a, const remote_server *b)
{
  return b->index < 64
         && ((__atomic_load_n (&a->peers, __ATOMIC_ACQUIRE) >> b->index) & 1);
}
static inline int
pocl_remote_dead (const remote_server *s)
{
  return __atomic_load_n (&s->dead, __ATOMIC_ACQUIRE);
}
/* How long a thread about to block on a completion polls first, the
   application's waiting for it and the command socket's reader: with the
   completion about one round trip away, it saves them their wake-ups.
   POCL_REMOTE_SPIN_US; 0 on two CPUs or fewer, where the spinner would take
   the CPU that the other threads and pocld need.  */
uint64_t pocl_remote_spin_ns (void);
/* The integer option `name` (read once into *cached, which starts at -1),
   by default `few_cpus` on a machine of two CPUs or fewer and `more_cpus`
   on more, clamped to 0..max.  */
int64_t pocl_remote_cpu_option (int64_t *cached, const char *name,
                                int64_t few_cpus, int64_t more_cpus,
                                int64_t max);
static inline void
pocl_remote_pause (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* remote_commands.c: 0, -1 (connection lost) or -2 (not supported) */
int pocl_remote_send_command (remote_server *s, _cl_command_node *node,
                              remote_event *re, pocl_remote_cmd *c,
                              struct iovec *waits);
/* One memory command, its data inline or on the data socket; `packed`:
   data is a temporary copy (the replay log copies it).  */
int pocl_remote_send_mem (remote_server *s, uint32_t type, remote_event *re,
                          pocl_remote_mem_cmd *m, struct iovec *waits,
                          const void *data, size_t data_size, int packed);
int pocl_remote_send_marker (remote_server *s, remote_event *re,
                             pocl_remote_cmd *c, struct iovec *waits,
                             int barrier);

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

/* remote_submit.c */
void pocl_remote_complete (remote_server *s, remote_inflight *f,
                           const pocl_remote_completion *c);
/* Completions that arrived before those of their dependencies (native
   callbacks of one server race, two sockets and two servers reorder) are
   held, and completed by a reader once the dependencies are.  */
void pocl_remote_complete_deferred (void);
/* Called by a reader thread, which completes the held completions after
   each message.  */
void pocl_remote_reader_thread_started (void);

/* remote_session.c, for remote_resume.c and remote_lanes.c */
long pocl_remote_client_key (char *key);
cl_int pocl_remote_handshake (remote_server *s, pocl_remote_link *l,
                              uint32_t role, uint32_t lane,
                              const uint8_t *session_id, const uint64_t *seen,
                              const char *key, size_t key_len,
                              pocl_remote_hello_reply *out, uint64_t *t0,
                              uint64_t *t1);
/* Breaks s's links, and what its bulk transport has: its readers end.  */
void pocl_remote_shutdown_links (remote_server *s);
/* What the bulk transport sets up besides, counted among the readers (1),
   or nothing to do (0); started by its start.  */
int pocl_remote_bulk_reserve (remote_server *s);

/* remote_ucx.c, for the data link's reader: pocld's UCX_HELLO (its
   header read), its body and address in `hello`, `addr`.  */
void pocl_remote_ucx_answered (remote_server *s,
                               const pocl_remote_ucx_hello *hello,
                               const void *addr, size_t len);

/* remote_reader.c */
int pocl_remote_start_readers (remote_server *s);
/* s's readers: the threads a resume waits for.  count_reader counts one
   in, spawn_reader starts it, detached (on failure it is counted out);
   each such thread ends with reader_done.  */
void pocl_remote_count_reader (remote_server *s);
int pocl_remote_spawn_reader (remote_server *s, void *(*fn) (void *),
                              void *arg);
void pocl_remote_reader_done (remote_server *s);

/* remote_includes.c: the files `source` includes from this client's
   directories (its working directory and the -I of `options` that exist
   here), packed for BUILD_PROGRAM (*count files, *packed malloc'd).  */
int pocl_remote_pack_includes (const char *source, const char *options,
                               char **packed, size_t *packed_len,
                               uint32_t *count);

/* remote_resume.c */
int pocl_remote_log_append (remote_log *log, const struct iovec *iov, int n,
                            int stable_from);
void pocl_remote_log_trim (remote_log *log, uint64_t seen);
int pocl_remote_log_iov (remote_log_entry *e, struct iovec *iov);

/* remote_coalesce.c */
/* How many kernels of a burst may wait for the next write
   (POCL_REMOTE_COALESCE): at most as many as one write takes (CMD_IOV: 8
   pieces a message, IOV_MAX 1024), and that many by default on a client
   with two CPUs or fewer.  */
#define REMOTE_COALESCE_MAX 64
#define REMOTE_COALESCE REMOTE_COALESCE_MAX
unsigned pocl_remote_coalesce_max (void);
/* Sends the message just logged on the command link (iov, n), or holds it
   (1; the trace's send is then recorded when it goes); with the link's
   send lock held.  */
int pocl_remote_send_cmd (remote_server *s, uint32_t type, struct iovec *iov,
                          int n);
/* Sends what s holds if it was held at `held_before` (monotonic ns) or
   earlier.  */
void pocl_remote_flush_held (remote_server *s, uint64_t held_before);
/* Sends what s holds if no command sent before it is in flight: for the
   readers, after each message.  */
void pocl_remote_flush_idle (remote_server *s);
/* Fills h and a with an ACK of what the readers have seen, which is then
   no longer due (the command link's send lock held).  */
void pocl_remote_take_ack (remote_server *s, pocl_remote_hdr *h,
                           pocl_remote_ack *a);
/* Whether some server holds kernels.  */
int pocl_remote_holding (void);
/* Forgets what s holds (the send lock held): a resume replays it.  Returns
   the first held message, or 0.  */
uint64_t pocl_remote_unhold (remote_server *s);
/* remote_session.c: pocl_remote_flush_held for every server.  */
void pocl_remote_flush_all_held (uint64_t held_before);
void pocl_remote_connection_broken (remote_server *s);

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
int pocl_remote_extension_served (const char *name, size_t len);
char *pocl_remote_filter_extensions (const char *server);
size_t pocl_remote_filter_name_versions (cl_name_version *a, size_t n,
                                         int features);
int pocl_remote_query_hidden (cl_device_info param);
int pocl_remote_query_zeroed (cl_device_id dev, cl_device_info param);
char *pocl_remote_source_prefix (const char *server,
                                 const cl_name_version *features,
                                 size_t num_features);
/* remote_program.c: the server device's built-in kernels
   (CL_DEVICE_BUILT_IN_KERNELS and ..._WITH_VERSION) */
void pocl_remote_setup_builtins (cl_device_id dev);

/* remote_submit.c, remote_program.c: fill their part of the ops table */
void pocl_remote_init_submit_ops (struct pocl_device_ops *ops);
void pocl_remote_init_program_ops (struct pocl_device_ops *ops);

#endif
