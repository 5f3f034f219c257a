/* raw_client.c - a PoCL-R client speaking the wire protocol directly over
   raw sockets (protocol/wire/pocl_remote_protocol.h), for tests of what pocld does
   with messages an OpenCL client would never send.  Included by a test after
   remote_test_util.c (for fail, xmalloc, clerr); the test sets server_port.
   test_session_isolation.c, test_hostile_limits.c, test_hostile_mem.c and
   test_hostile_peer.c use it.  */

#include "pocl_remote_protocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

static uint16_t server_port;
static char server_host[64] = "127.0.0.1";

/* server_port from POCL_REMOTE0_PARAMETERS (host:port/device), which
   run_remote.sh sets for the shared fixture's pocld.  */
static __attribute__ ((unused)) void
raw_port_from_run_remote (void)
{
  const char *p = getenv ("POCL_REMOTE0_PARAMETERS");
  const char *colon = p ? strrchr (p, ':') : NULL;
  if (colon == NULL)
    fail ("POCL_REMOTE0_PARAMETERS (host:port/device) is not set: run me "
          "through run_remote.sh");
  server_port = (uint16_t)atoi (colon + 1);
}


enum
{
  IO_OK = 0,
  IO_CLOSED = -1, /* orderly close or reset by the peer */
  IO_TIMEOUT = -2
};

static int
raw_connect (uint16_t port)
{
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    fail ("socket: %s", strerror (errno));
  struct sockaddr_in a;
  memset (&a, 0, sizeof (a));
  a.sin_family = AF_INET;
  a.sin_port = htons (port);
  if (inet_pton (AF_INET, server_host, &a.sin_addr) != 1)
    fail ("bad server address %s", server_host);
  if (connect (fd, (struct sockaddr *)&a, sizeof (a)) != 0)
    fail ("connect to %s:%u: %s (is pocld still alive?)", server_host,
          (unsigned)port, strerror (errno));
  int one = 1;
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  return fd;
}

static int
send_all (int fd, const void *buf, size_t n)
{
  const char *p = buf;
  while (n > 0)
    {
      ssize_t w = send (fd, p, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        return IO_CLOSED;
      p += w;
      n -= (size_t)w;
    }
  return IO_OK;
}

/* Reads exactly n bytes, waiting at most timeout_ms for each chunk.  */
static int
recv_all (int fd, void *buf, size_t n, int timeout_ms)
{
  char *p = buf;
  while (n > 0)
    {
      struct pollfd pfd = { fd, POLLIN, 0 };
      int r = poll (&pfd, 1, timeout_ms);
      if (r < 0 && errno == EINTR)
        continue;
      if (r == 0)
        return IO_TIMEOUT;
      ssize_t g = recv (fd, p, n, 0);
      if (g < 0 && errno == EINTR)
        continue;
      if (g <= 0)
        return IO_CLOSED;
      p += g;
      n -= (size_t)g;
    }
  return IO_OK;
}

static int
raw_send (int fd, uint32_t type, uint64_t id, const void *body,
          uint32_t body_size, const void *payload, uint64_t payload_size)
{
  pocl_remote_hdr h;
  h.type = type;
  h.body_size = body_size;
  h.payload_size = payload_size;
  h.id = id;
  size_t n = sizeof (h) + body_size + payload_size;
  char *buf = xmalloc (n);
  memcpy (buf, &h, sizeof (h));
  if (body_size)
    memcpy (buf + sizeof (h), body, body_size);
  if (payload_size)
    memcpy (buf + sizeof (h) + body_size, payload, payload_size);
  int r = send_all (fd, buf, n);
  free (buf);
  return r;
}

typedef struct
{
  pocl_remote_hdr h;
  union
  {
    pocl_remote_hello_reply hello_reply;
    pocl_remote_reply reply;
    pocl_remote_completion completion;
    pocl_remote_auth_challenge challenge;
    char raw[256];
  } body;
  unsigned char *payload; /* malloc'd, payload_size bytes */
} raw_msg;

/* Receives one message (any type).  A malformed message from the server is a
   test failure in itself.  */
static int
raw_recv (int fd, raw_msg *m, int timeout_ms)
{
  memset (m, 0, sizeof (*m));
  int r = recv_all (fd, &m->h, sizeof (m->h), timeout_ms);
  if (r)
    return r;
  int64_t want = pocl_remote_body_size (m->h.type);
  if (want < 0 || (uint64_t)want != m->h.body_size
      || m->h.body_size > sizeof (m->body))
    fail ("pocld sent a malformed message: type %u body_size %u",
          m->h.type, m->h.body_size);
  if (m->h.payload_size > (64u << 20))
    fail ("pocld sent a %llu-byte payload (type %u) to a 64-byte request",
          (unsigned long long)m->h.payload_size, m->h.type);
  r = recv_all (fd, &m->body, m->h.body_size, timeout_ms);
  if (r)
    return r;
  m->payload = xmalloc (m->h.payload_size);
  r = recv_all (fd, m->payload, m->h.payload_size, timeout_ms);
  if (r)
    {
      free (m->payload);
      m->payload = NULL;
    }
  return r;
}

typedef struct
{
  int cmd, data;
  uint8_t sid[16];
  uint32_t num_devices;
  uint64_t next_id;
} raw_session;

static void
hello_body (pocl_remote_hello *hb, uint32_t magic, uint32_t version,
            uint32_t role, const uint8_t *sid)
{
  memset (hb, 0, sizeof (*hb));
  hb->magic = magic;
  hb->version = version;
  hb->role = role;
  if (sid)
    memcpy (hb->session_id, sid, 16);
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  hb->client_time_ns = (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* One correct handshake on fd, without a key (HELLO, AUTH_CHALLENGE, a zero
   AUTH, HELLO_REPLY), as a peer link of index `peer_index` for role PEER;
   returns the reply's status (fails on I/O).  */
static int32_t
raw_hello_as (int fd, uint32_t role, const uint8_t *sid, uint32_t peer_index,
              pocl_remote_hello_reply *out)
{
  pocl_remote_hello hb;
  hello_body (&hb, POCL_REMOTE_MAGIC, POCL_REMOTE_PROTOCOL_VERSION, role, sid);
  hb.peer_index = peer_index;
  if (raw_send (fd, POCL_RMSG_HELLO, 0, &hb, sizeof (hb), NULL, 0))
    fail ("sending a correct HELLO (role %u) failed: connection closed", role);
  raw_msg m;
  int r = raw_recv (fd, &m, 10000);
  if (r == IO_OK && m.h.type == POCL_RMSG_AUTH_CHALLENGE)
    {
      pocl_remote_auth a;
      memset (&a, 0, sizeof (a));
      free (m.payload);
      if (raw_send (fd, POCL_RMSG_AUTH, 0, &a, sizeof (a), NULL, 0))
        fail ("sending AUTH (role %u) failed: connection closed", role);
      r = raw_recv (fd, &m, 10000);
    }
  if (r)
    fail ("no HELLO_REPLY to a correct HELLO (role %u): %s", role,
          r == IO_TIMEOUT ? "timeout (10 s)" : "connection closed");
  free (m.payload);
  if (m.h.type != POCL_RMSG_HELLO_REPLY)
    fail ("answer to HELLO has type %u, not HELLO_REPLY", m.h.type);
  if (m.body.hello_reply.magic != POCL_REMOTE_MAGIC
      || m.body.hello_reply.version != POCL_REMOTE_PROTOCOL_VERSION)
    fail ("HELLO_REPLY has magic 0x%08x version %u", m.body.hello_reply.magic,
          m.body.hello_reply.version);
  *out = m.body.hello_reply;
  return m.body.hello_reply.status;
}

static int32_t
raw_hello (int fd, uint32_t role, const uint8_t *sid,
           pocl_remote_hello_reply *out)
{
  return raw_hello_as (fd, role, sid, 0, out);
}

static void
raw_open (raw_session *s)
{
  pocl_remote_hello_reply rep;
  memset (s, 0, sizeof (*s));
  s->next_id = 1000;
  s->cmd = raw_connect (server_port);
  int32_t st = raw_hello (s->cmd, POCL_REMOTE_ROLE_COMMAND, NULL, &rep);
  if (st != CL_SUCCESS)
    fail ("pocld refused a correct command-socket HELLO with status %d", st);
  static const uint8_t zero[16];
  if (memcmp (rep.session_id, zero, 16) == 0)
    fail ("pocld gave an all-zero session id");
  if (rep.num_devices < 1)
    fail ("pocld reports %u devices", rep.num_devices);
  memcpy (s->sid, rep.session_id, 16);
  s->num_devices = rep.num_devices;
  s->data = raw_connect (server_port + POCL_REMOTE_DATA_PORT_OFFSET);
  st = raw_hello (s->data, POCL_REMOTE_ROLE_DATA, s->sid, &rep);
  if (st != CL_SUCCESS)
    fail ("pocld refused the data-socket HELLO of its own session: %d", st);
}

static void
raw_close (raw_session *s)
{
  if (s->cmd >= 0)
    close (s->cmd);
  if (s->data >= 0)
    close (s->data);
  s->cmd = s->data = -1;
}

/* A synchronous request: returns the reply status, or IO_CLOSED.  */
static int
raw_request (raw_session *s, uint32_t type, const void *body, uint32_t bsize,
             const void *payload, uint64_t psize, int32_t *status)
{
  uint64_t id = ++s->next_id;
  if (raw_send (s->cmd, type, id, body, bsize, payload, psize))
    return IO_CLOSED;
  for (;;)
    {
      raw_msg m;
      int r = raw_recv (s->cmd, &m, 20000);
      if (r == IO_TIMEOUT)
        fail ("no REPLY to request type %u within 20 s", type);
      if (r)
        return r;
      free (m.payload);
      if (m.h.type == POCL_RMSG_REPLY && m.h.id == id)
        {
          *status = m.body.reply.status;
          return IO_OK;
        }
      /* anything else (a late completion) is not ours: skip */
    }
}

/* An enqueued command: waits for its COMPLETION.  On IO_OK *status and
   (for reads) *data (malloc'd) / *data_size are set.  */
static int
raw_command (raw_session *s, uint32_t type, const void *body, uint32_t bsize,
             const void *payload, uint64_t psize, int32_t *status,
             unsigned char **data, uint64_t *data_size)
{
  uint64_t id = ++s->next_id;
  if (raw_send (s->cmd, type, id, body, bsize, payload, psize))
    return IO_CLOSED;
  for (;;)
    {
      raw_msg m;
      int r = raw_recv (s->cmd, &m, 20000);
      if (r == IO_TIMEOUT)
        fail ("no COMPLETION for command type %u (event id %llu) within 20 s",
              type, (unsigned long long)id);
      if (r)
        return r;
      if (m.h.type == POCL_RMSG_COMPLETION && m.h.id == id)
        {
          *status = m.body.completion.status;
          if (data)
            {
              *data = m.payload;
              *data_size = m.h.payload_size;
            }
          else
            free (m.payload);
          return IO_OK;
        }
      free (m.payload);
    }
}

static int
raw_create_queue (raw_session *s, uint64_t qid)
{
  pocl_remote_create_queue cq;
  memset (&cq, 0, sizeof (cq));
  cq.queue_id = qid;
  cq.device = 0;
  int32_t st;
  int r = raw_request (s, POCL_RMSG_CREATE_QUEUE, &cq, sizeof (cq), NULL, 0,
                       &st);
  if (r)
    fail ("CREATE_QUEUE %llu: connection closed", (unsigned long long)qid);
  if (st != CL_SUCCESS)
    fail ("CREATE_QUEUE %llu refused: %d (%s)", (unsigned long long)qid, st,
          clerr (st));
  return 0;
}

static void
raw_create_buffer (raw_session *s, uint64_t mid, uint64_t size)
{
  pocl_remote_create_buffer cb;
  memset (&cb, 0, sizeof (cb));
  cb.mem_id = mid;
  cb.flags = CL_MEM_READ_WRITE;
  cb.size = size;
  cb.device = 0;
  int32_t st;
  if (raw_request (s, POCL_RMSG_CREATE_BUFFER, &cb, sizeof (cb), NULL, 0,
                   &st))
    fail ("CREATE_BUFFER 0x%llx: connection closed", (unsigned long long)mid);
  if (st != CL_SUCCESS)
    fail ("CREATE_BUFFER 0x%llx refused: %d (%s)", (unsigned long long)mid, st,
          clerr (st));
}

static void
mem_cmd_init (pocl_remote_mem_cmd *mc, uint64_t qid, uint64_t src,
              uint64_t dst, uint64_t bytes)
{
  memset (mc, 0, sizeof (*mc));
  mc->cmd.queue_id = qid;
  mc->src_id = src;
  mc->dst_id = dst;
  mc->region[0] = bytes;
  mc->region[1] = 1;
  mc->region[2] = 1;
  mc->data_size = bytes;
}

/* WRITE of `bytes` bytes at offset 0: returns IO_OK with *status set, or
   IO_CLOSED.  */
static int
raw_write (raw_session *s, uint64_t qid, uint64_t mid, const void *data,
           uint64_t bytes, int32_t *status)
{
  pocl_remote_mem_cmd mc;
  mem_cmd_init (&mc, qid, 0, mid, bytes);
  return raw_command (s, POCL_RMSG_WRITE, &mc, sizeof (mc), data, bytes,
                      status, NULL, NULL);
}

static int
raw_read (raw_session *s, uint64_t qid, uint64_t mid, uint64_t bytes,
          int32_t *status, unsigned char **data, uint64_t *got)
{
  pocl_remote_mem_cmd mc;
  mem_cmd_init (&mc, qid, mid, 0, bytes);
  return raw_command (s, POCL_RMSG_READ, &mc, sizeof (mc), NULL, 0, status,
                      data, got);
}
