/* remote_channel_private.h - what the files of the channel share among
   themselves (remote_channel.h is what the driver sees): requests, the
   send path (replay log, coalescing), the readers, the handshake and the
   transports.
   Declarations go by file.  */

#ifndef POCL_REMOTE_CHANNEL_PRIVATE_H
#define POCL_REMOTE_CHANNEL_PRIVATE_H

#include "remote_channel.h"
#include "remote_transport.h"

typedef struct remote_request remote_request;

/* A synchronous request waiting for its REPLY.  */
struct remote_request
{
  uint64_t id;
  int done;
  int detached;        /* nobody waits: the reader frees it */
  remote_server *link; /* CONNECT_PEER: the peer, linked on success */
  /* detached: where the reply's status goes (NULL: a failure is logged),
     on the reader thread */
  void (*answered) (remote_server *s, remote_request *req, cl_int status);
  uint32_t type;
  cl_int status;
  void *payload;
  uint64_t payload_size;
  remote_request *next;
};

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

/* The handlers the driver registered (a copy: one load to each call).  */
extern remote_channel_handlers pocl_remote_handlers;

/* remote_conn.c */
/* The session is lost for good: waiters fail, and so do the commands in
   flight (through the handlers).  */
void pocl_remote_server_lost (remote_server *s);
/* What the bulk transport sets up besides, counted among the readers (1),
   or nothing to do (0); started by its start.  */
int pocl_remote_bulk_reserve (remote_server *s);
/* s's readers, and the threads of its bulk transport: the threads a
   resume waits for.  count_reader counts one in, spawn_reader starts it,
   detached (on failure it is counted out); each such thread ends with
   reader_done.  */
void pocl_remote_count_reader (remote_server *s);
int pocl_remote_spawn_reader (remote_server *s, void *(*fn) (void *),
                              void *arg);
void pocl_remote_reader_done (remote_server *s);

/* remote_options.c: the integer option `name` (read once into *cached, which
   starts at -1), by default `few_cpus` on a machine of two CPUs or fewer and
   `more_cpus` on more, clamped to 0..max.  */
int64_t pocl_remote_cpu_option (int64_t *cached, const char *name,
                                int64_t few_cpus, int64_t more_cpus,
                                int64_t max);

/* remote_registry.c: the servers, one record per host:port, newest first
   (the others follow through `next`), under one lock, which also guards
   their `linking` and the writes of their `peers`.  With the lock held:
   the first record, the one of host:port (NULL: none), s added, whether s
   is there, and old's place given to s (old is kept: threads of its
   session may still hold it).  */
void pocl_remote_registry_lock (void);
int pocl_remote_registry_trylock (void);
void pocl_remote_registry_unlock (void);
remote_server *pocl_remote_registry_first (void);
remote_server *pocl_remote_registry_find (const char *host, uint16_t port);
void pocl_remote_registry_add (remote_server *s);
int pocl_remote_registry_holds (const remote_server *s);
void pocl_remote_registry_replace (remote_server *old, remote_server *s);

/* remote_handshake.c: the pre-shared key (POCL_REMOTE_MAX_KEY bytes; its
   length, 0 without one, -1 for a bad one), and the handshake on l.  */
long pocl_remote_client_key (char *key);
cl_int pocl_remote_handshake (remote_server *s, pocl_remote_link *l,
                              uint32_t role, uint32_t lane,
                              const uint8_t *session_id, const uint64_t *seen,
                              const char *key, size_t key_len,
                              pocl_remote_hello_reply *out, uint64_t *t0,
                              uint64_t *t1);

/* client_ucx.c, for the data link's reader: pocld's UCX_HELLO (its
   header read), its body and address in `hello`, `addr`.  */
void pocl_remote_ucx_answered (remote_server *s,
                               const pocl_remote_ucx_hello *hello,
                               const void *addr, size_t len);

/* remote_reader.c: the two reader threads of s's current links.  One that
   finds its link broken calls `broken`; one that finds the session lost (a
   message that breaks the protocol), pocl_remote_server_lost.  */
int pocl_remote_reader_start (remote_server *s,
                              void (*broken) (remote_server *s));

/* remote_resume.c: s's readers, started on its current links; when one
   finds its link broken, the reconnect starts.  */
int pocl_remote_start_readers (remote_server *s);

/* remote_send.c */
/* Breaks s's links, and what its bulk transport has: its readers end.  */
void pocl_remote_shutdown_links (remote_server *s);
/* The in-flight table's first entry of bucket b, taken out (NULL: none).  */
remote_inflight *pocl_remote_event_pop (remote_server *s, unsigned b);
/* The replay log.  append: one message (iov[0] the header), the pieces
   from `stable_from` on referenced, the others copied (-1 without memory);
   trim: drops the entries the server has handled (count `seen`); iov: an
   entry's pieces as sent (at most 8), their count.  */
int pocl_remote_log_append (remote_log *log, const struct iovec *iov, int n,
                            int stable_from);
void pocl_remote_log_trim (remote_log *log, uint64_t seen);
int pocl_remote_log_iov (remote_log_entry *e, struct iovec *iov);

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
/* Sends what s holds if no command sent before it is in flight: for the
   readers, after each message.  */
void pocl_remote_flush_idle (remote_server *s);
/* Fills h and a with an ACK of what the readers have seen, which is then
   no longer due (the command link's send lock held).  */
void pocl_remote_take_ack (remote_server *s, pocl_remote_hdr *h,
                           pocl_remote_ack *a);
/* Forgets what s holds (the send lock held): a resume replays it.  Returns
   the first held message, or 0.  */
uint64_t pocl_remote_unhold (remote_server *s);

#endif
