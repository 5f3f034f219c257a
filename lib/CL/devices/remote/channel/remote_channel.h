/* remote_channel.h - the channel: how the remote driver talks to pocld.
   The one header of lib/CL/devices/remote/channel/ that the driver
   includes; the rest of channel/ is the channel's own
   (remote_channel_private.h).

   The channel connects and keeps a session per pocld (remote_session.c,
   remote_handshake.c, remote_conn.c), sends messages whole from the
   caller's thread, logged for a resume and coalesced into bursts
   (remote_send.c; the resume: remote_resume.c), over the client's transports
   (remote_transport.h), and reads replies and completions on its reader
   threads (remote_reader.c).  What it reads goes up through the handlers the
   driver registers (remote_channel_handlers): the channel calls no driver
   function and includes no driver header.  README.md maps the files.  */

#ifndef POCL_REMOTE_CHANNEL_H
#define POCL_REMOTE_CHANNEL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "pocl_cl.h"
#include "pocl_remote_bulk.h"
#include "pocl_remote_protocol.h"
#include "remote_trace.h"

/* Buckets of the in-flight command table; a power of two.  */
#define REMOTE_EVENT_BUCKETS 1024

typedef struct remote_server remote_server;
typedef struct remote_inflight remote_inflight;

/* A socket's replay log (remote_send.c): entries first..next-1 (message
   counts, from 1) at ring[seq & (cap-1)].  */
typedef struct remote_log
{
  struct remote_log_entry *ring;
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
  /* atomic: the host holds pages of the server's memory, to write back
     before the next message (remote_channel_handlers.before_send) */
  int host_copies;
  /* bit i: a CONNECT_PEER to server i awaits its reply (servers lock) */
  uint64_t linking;
  /* bytes this client sent and received on the server's sockets, and bytes
     the server reported receiving from peers for migrations */
  uint64_t bytes_sent, bytes_received, peer_bytes;
  /* The command and data links (protocol/transports/pocl_remote_link.h), of
     `transport`; replaced by a resume once no reader runs.  */
  const struct remote_transport *transport;
  pocl_remote_link cmd, data;
  /* How large payloads move on the data link (protocol/transports/pocl_remote_bulk.h),
     of `bulk_transport`; with lanes, bulk.state is `lanes`, which
     client_lanes.c opens in the background; with UCX (client_ucx.c) it is
     `ucx`, over the lanes or inline.  */
  const struct remote_bulk_transport *bulk_transport;
  pocl_remote_bulk bulk;
  pocl_remote_lanes lanes;
  pocl_remote_ucx_bulk ucx;
  int ucx_offer; /* the data link's UCX offer is due (client_ucx.c) */
  uint8_t session_id[16];
  uint32_t num_devices;
  /* how long the server keeps the session for a resume (its HELLO_REPLY) */
  uint32_t session_grace_ms;
  /* server CLOCK_REALTIME ns minus client monotonic ns */
  int64_t clock_offset_ns;

  /* Each sender writes a whole message under its socket's lock, which also
     guards the socket's replay log.  */
  pthread_mutex_t cmd_send_lock;
  pthread_mutex_t data_send_lock;
  remote_log log[2]; /* [0]: command socket, [1]: data socket */
  /* the first message of the command log held back (remote_send.c),
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
  struct remote_request *requests;
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

/* The server's record outlives its session: a dead one stays allocated
   (pocl_remote_server_renew), since threads of the dead session may still
   hold it.  Of its fields the driver reads host, port, index, num_devices,
   epoch, newest_context, the byte counts and down (peers and dead through
   pocl_remote_linked and pocl_remote_dead), and takes data_order_lock; the
   rest is the channel's.  */

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
  /* Before a message to s while s->host_copies is set, no locks held:
     the driver writes back what the host changed in server memory.  */
  void (*before_send) (remote_server *s);
} remote_channel_handlers;
void pocl_remote_channel_setup (const remote_channel_handlers *h);

/* DNS-SD discovery (remote_discovery.c).  A server found by browsing:
   its numeric address (IPv6 without brackets) and command port, and its
   service instance name for messages.  */
typedef struct pocl_remote_found
{
  char host[64];
  uint16_t port;
  char name[64];
} pocl_remote_found;
/* servers one discovery adds at most */
#define POCL_REMOTE_DISCOVERY_MAX 64
/* With POCL_REMOTE_DISCOVERY=avahi, browses for POCL_REMOTE_DNSSD_TYPE for
   POCL_REMOTE_DISCOVERY_MS and resolves what it finds into out[0..max),
   one entry per server: how many.  0 when not asked for, and after a
   refused setting or without a reachable avahi-daemon (both said on
   stderr).  */
unsigned pocl_remote_discover (pocl_remote_found *out, unsigned max);

/* Sessions (remote_session.c).  The session with host:port, connected on
   first use; peer_host/peer_port: where its peers reach it (NULL: host,
   port + 2).  */
remote_server *pocl_remote_server_get (const char *host, uint16_t port,
                                       const char *peer_host,
                                       uint16_t peer_port, cl_int *err);
/* A new session with the server of a dead one, which it replaces in the
   registry; `epoch`: the oldest context id it serves.  NULL on failure.  */
remote_server *pocl_remote_server_renew (remote_server *old, uint64_t epoch,
                                         cl_int *err);
/* Introduces a and b, asynchronously: their commands then depend on each
   other and migrate buffers server to server.  */
void pocl_remote_peer_link (remote_server *a, remote_server *b);
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

/* Messages (remote_send.c): 0, or -1 when the session is lost.  One
   message, whole, on the command link (data_socket 0) or the data link.  */
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
/* A request and its REPLY, whose payload (malloc'd) goes to *reply
   (remote_conn.c).  */
cl_int pocl_remote_request (remote_server *s, uint32_t type, const void *body,
                            size_t body_size, const struct iovec *payload,
                            int payload_count, void **reply,
                            uint64_t *reply_size);
/* A request whose reply nobody waits for: a failure is logged.  */
void pocl_remote_request_async (remote_server *s, uint32_t type,
                                const void *body, size_t body_size,
                                const struct iovec *payload,
                                int payload_count);
/* The in-flight table (remote_send.c): a command's completion finds it
   there.  take
   returns NULL when it is not (any more) in the table.  */
void pocl_remote_event_insert (remote_server *s, remote_inflight *f);
remote_inflight *pocl_remote_event_take (remote_server *s, uint64_t id);
uint64_t pocl_remote_server_to_client_time (remote_server *s, uint64_t ts);
/* Sends the kernels every server holds back (remote_send.c) since
   `held_before` (monotonic ns) or earlier; UINT64_MAX: all of them.  */
void pocl_remote_flush_all_held (uint64_t held_before);

/* How long a thread about to block on a completion polls first, the
   application's waiting for it and the command socket's reader: with the
   completion about one round trip away, it saves them their wake-ups.
   POCL_REMOTE_SPIN_US; 0 on two CPUs or fewer, where the spinner would take
   the CPU that the other threads and pocld need.  */
uint64_t pocl_remote_spin_ns (void);
static inline void
pocl_remote_pause (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

#endif
