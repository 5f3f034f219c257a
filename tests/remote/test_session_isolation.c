/* test_session_isolation.c - pocld keeps the sessions of its clients apart
   and refuses bad handshakes.

   Run through run_remote.sh (it reads the port from POCL_REMOTE0_PARAMETERS).
   The parent process speaks the wire protocol directly over raw sockets
   (protocol/wire/pocl_remote_protocol.h); two forked children are ordinary OpenCL
   clients through the remote driver.  Checks, in order:

   1. Handshake: HELLO with a wrong magic, a wrong version (0 and 2), an
      unknown role, a DATA-role HELLO naming a session that does not exist, a
      HELLO with a wrong body size, and a first message that is not a HELLO:
      each connection must be closed by pocld (a HELLO_REPLY with a non-success
      status before the close is accepted; a successful HELLO_REPLY or a
      connection left open for 25 s is a failure).  A message with a wrong
      body size after a good handshake must also close the connection.  After
      every refusal a correct handshake must still succeed.
   2. Raw sessions S1 and S2 use the same ids: S2 reading S1's buffer id
      gets an error completion or the connection closed, never S1's bytes;
      S2 can then create its own buffer under that very id, and each session
      reads back its own data.
   3. OpenCL clients A and B run identical call sequences (so PoCL gives their
      objects identical ids), interleaved: A writes its pattern, B writes its
      pattern, A reads back A's pattern and B reads back B's.  B exits (its
      session ends); A stays connected.
   4. While A is connected, a raw session scans ids (i << 8) | 0 for i in
      1..4096 (how the driver names buffers of server device 0) and for each
      sends a READ (must get an error completion or the connection closed,
      never data), a WRITE of a junk pattern and a FREE_BUFFER (both must not
      touch A).  Then A re-reads its buffers and re-runs its kernel: its data
      must be intact.
   5. A final correct handshake plus buffer round trip: pocld still serves.

   PASS only when all hold; FAIL names the first check that did not.  */

#define TEST_NAME "session_isolation"
#include "remote_test_util.c"

#include <sys/wait.h>

/* the raw protocol client: raw_connect, raw_hello, raw_session, ... */
#include "raw_client.c"

/* ------------------------------------------------------------------ */
/* 1. Handshake refusals.                                              */

/* After a bad first message: the server must close fd.  A HELLO_REPLY with a
   non-success status before that is fine.  */
static void
expect_refused (int fd, const char *what)
{
  for (int msgs = 0;; ++msgs)
    {
      raw_msg m;
      /* 25 s: a first message shorter than a HELLO may only be refused
         when pocld's handshake deadline (10 s) expires.  */
      int r = raw_recv (fd, &m, 25000);
      if (r == IO_CLOSED)
        break;
      if (r == IO_TIMEOUT)
        fail ("%s: pocld neither answered nor closed the connection within "
              "25 s",
              what);
      free (m.payload);
      /* an acceptable HELLO is challenged first; the refusal follows AUTH */
      if (m.h.type == POCL_RMSG_AUTH_CHALLENGE)
        {
          pocl_remote_auth a;
          memset (&a, 0, sizeof (a));
          raw_send (fd, POCL_RMSG_AUTH, 0, &a, sizeof (a), NULL, 0);
          --msgs; /* not the answer */
          continue;
        }
      if (m.h.type != POCL_RMSG_HELLO_REPLY || msgs > 0)
        fail ("%s: pocld answered with message type %u instead of closing",
              what, m.h.type);
      if (m.body.hello_reply.status == CL_SUCCESS)
        fail ("%s: pocld accepted it (HELLO_REPLY status CL_SUCCESS)", what);
    }
  close (fd);
}

static void
check_still_serves (const char *after)
{
  raw_session s;
  raw_open (&s);
  raw_close (&s);
  (void)after;
}

static void
bad_hello (uint16_t port, uint32_t magic, uint32_t version, uint32_t role,
           const uint8_t *sid, uint32_t body_size, uint32_t type,
           const char *what)
{
  int fd = raw_connect (port);
  pocl_remote_hello hb;
  hello_body (&hb, magic, version, role, sid);
  char body[sizeof (hb) + 16];
  memset (body, 0, sizeof (body));
  memcpy (body, &hb, sizeof (hb));
  if (body_size > sizeof (body))
    body_size = sizeof (body);
  /* The peer may close before it reads everything: ignore send errors.  */
  (void)raw_send (fd, type, 0, body, body_size, NULL, 0);
  expect_refused (fd, what);
  check_still_serves (what);
  note ("handshake: %s -> refused, server still serves", what);
}

/* A peer-role HELLO on the peer port for session sid, its peer_index
   `index` (a link's index and lane number, POCL_REMOTE_PEER_HELLO_INDEX):
   must be refused.  */
static void
bad_peer_hello (const uint8_t *sid, uint32_t index, const char *what)
{
  int fd
      = raw_connect ((uint16_t)(server_port + POCL_REMOTE_PEER_PORT_OFFSET));
  pocl_remote_hello hb;
  hello_body (&hb, POCL_REMOTE_MAGIC, POCL_REMOTE_PROTOCOL_VERSION,
              POCL_REMOTE_ROLE_PEER, sid);
  hb.peer_index = index;
  (void)raw_send (fd, POCL_RMSG_HELLO, 0, &hb, sizeof (hb), NULL, 0);
  expect_refused (fd, what);
  check_still_serves (what);
  note ("handshake: %s -> refused, server still serves", what);
}

static void
check_handshakes (void)
{
  uint16_t p = server_port,
           dp = (uint16_t)(server_port + POCL_REMOTE_DATA_PORT_OFFSET);
  const uint32_t M = POCL_REMOTE_MAGIC, V = POCL_REMOTE_PROTOCOL_VERSION;
  const uint32_t HS = sizeof (pocl_remote_hello);
  uint8_t bogus_sid[16];
  for (int i = 0; i < 16; ++i)
    bogus_sid[i] = (uint8_t)(0xA0 + i);

  /* First a good one: the server is there at all.  */
  check_still_serves ("start");

  bad_hello (p, 0x12345678u, V, POCL_REMOTE_ROLE_COMMAND, NULL, HS,
             POCL_RMSG_HELLO, "wrong magic on the command socket");
  bad_hello (p, __builtin_bswap32 (M), V, POCL_REMOTE_ROLE_COMMAND, NULL, HS,
             POCL_RMSG_HELLO, "byte-swapped magic on the command socket");
  bad_hello (p, M, V + 1, POCL_REMOTE_ROLE_COMMAND, NULL, HS, POCL_RMSG_HELLO,
             "version+1 on the command socket");
  bad_hello (p, M, 0, POCL_REMOTE_ROLE_COMMAND, NULL, HS, POCL_RMSG_HELLO,
             "version 0 on the command socket");
  bad_hello (p, M, V, 7, NULL, HS, POCL_RMSG_HELLO,
             "unknown role 7 on the command socket");
  bad_hello (p, M, V, POCL_REMOTE_ROLE_COMMAND, NULL, HS - 8, POCL_RMSG_HELLO,
             "HELLO with a short body_size");
  bad_hello (p, M, V, POCL_REMOTE_ROLE_COMMAND, NULL, sizeof (pocl_remote_create_buffer),
             POCL_RMSG_CREATE_BUFFER, "CREATE_BUFFER before any HELLO");
  bad_hello (p, M, V, POCL_REMOTE_ROLE_COMMAND, NULL, HS, 999,
             "unknown message type 999 as the first message");
  bad_hello (dp, 0x12345678u, V, POCL_REMOTE_ROLE_DATA, bogus_sid, HS,
             POCL_RMSG_HELLO, "wrong magic on the data socket");
  bad_hello (dp, M, V + 1, POCL_REMOTE_ROLE_DATA, bogus_sid, HS,
             POCL_RMSG_HELLO, "version+1 on the data socket");
  bad_hello (dp, M, V, POCL_REMOTE_ROLE_DATA, bogus_sid, HS, POCL_RMSG_HELLO,
             "data socket naming a session that does not exist");

  /* A live session's id presented on the data socket after that session
     already has its data socket: accepting a second one would let a third
     party attach to someone else's session; either refusal or acceptance is
     defensible protocol-wise, so only the all-zero id is checked here.  */
  static const uint8_t zero[16];
  bad_hello (dp, M, V, POCL_REMOTE_ROLE_DATA, zero, HS, POCL_RMSG_HELLO,
             "data socket with the all-zero session id");

  /* After a good handshake: a message whose body_size does not match its
     type is a protocol error, the connection must close.  */
  {
    raw_session s;
    raw_open (&s);
    char junk[16] = { 0 };
    (void)raw_send (s.cmd, POCL_RMSG_CREATE_QUEUE, 1, junk, sizeof (junk),
                    NULL, 0);
    expect_refused (s.cmd, "CREATE_QUEUE with body_size 16 in a session");
    s.cmd = -1;
    raw_close (&s);
    check_still_serves ("bad body size");
    note ("handshake: bad body_size after HELLO -> closed, server still "
          "serves");
  }

  /* Peer lanes (protocol 12) for a live session: of a link it does not
     have, numbered past POCL_REMOTE_MAX_LANES, of an index past
     POCL_REMOTE_MAX_PEERS.  */
  {
    raw_session s;
    raw_open (&s);
    bad_peer_hello (s.sid, POCL_REMOTE_PEER_HELLO_INDEX (1, 1),
                    "a peer lane of a link the session does not have");
    bad_peer_hello (s.sid,
                    POCL_REMOTE_PEER_HELLO_INDEX (1, POCL_REMOTE_MAX_LANES + 1),
                    "a peer lane numbered past POCL_REMOTE_MAX_LANES");
    bad_peer_hello (s.sid,
                    POCL_REMOTE_PEER_HELLO_INDEX (POCL_REMOTE_MAX_PEERS, 1),
                    "a peer lane of a peer index past POCL_REMOTE_MAX_PEERS");
    raw_close (&s);
  }
}

/* ------------------------------------------------------------------ */
/* 2. Two raw sessions, same ids.                                      */

#define RAW_QID 0x51ull
#define RAW_MID (5ull << 8)
#define NBYTES 64

static void
pattern (unsigned char *b, size_t n, const char *tag, uint32_t salt)
{
  size_t tl = strlen (tag);
  for (size_t i = 0; i < n; ++i)
    b[i] = (unsigned char)(tag[i % tl] ^ (i / tl + salt));
}

static void
check_raw_sessions (void)
{
  unsigned char p1[NBYTES], p2[NBYTES];
  pattern (p1, NBYTES, "S1-SECRET-", 1);
  pattern (p2, NBYTES, "S2-OTHER--", 2);

  raw_session s1, s2;
  raw_open (&s1);
  raw_open (&s2);
  if (memcmp (s1.sid, s2.sid, 16) == 0)
    fail ("two sessions got the same session id");
  raw_create_queue (&s1, RAW_QID);
  raw_create_buffer (&s1, RAW_MID, NBYTES);
  int32_t st;
  if (raw_write (&s1, RAW_QID, RAW_MID, p1, NBYTES, &st) || st != 0)
    fail ("S1: WRITE to its own buffer failed");
  unsigned char *got = NULL;
  uint64_t got_n = 0;
  if (raw_read (&s1, RAW_QID, RAW_MID, NBYTES, &st, &got, &got_n) || st != 0
      || got_n != NBYTES || memcmp (got, p1, NBYTES) != 0)
    fail ("S1: reading back its own buffer failed (status %d, %llu bytes)",
          st, (unsigned long long)got_n);
  free (got);
  note ("raw session S1: own buffer round trip OK (positive control)");

  /* S2 names S1's queue and buffer ids.  */
  raw_create_queue (&s2, RAW_QID);
  got = NULL;
  int r = raw_read (&s2, RAW_QID, RAW_MID, NBYTES, &st, &got, &got_n);
  if (r == IO_OK)
    {
      if (st >= 0)
        fail ("S2 read S1's buffer id 0x%llx: status %d with %llu bytes%s",
              (unsigned long long)RAW_MID, st, (unsigned long long)got_n,
              got_n == NBYTES && memcmp (got, p1, NBYTES) == 0
                  ? " -- S1's data leaked" : "");
      if (got_n && got && memmem (got, got_n, "S1-SECRET-", 10))
        fail ("S2's failed read still carried S1's data");
      free (got);
      note ("raw session S2: READ of S1's buffer id -> error completion %d "
            "(%s)",
            st, clerr (st));
    }
  else
    {
      note ("raw session S2: READ of S1's buffer id -> connection closed");
      raw_close (&s2);
      raw_open (&s2);
      raw_create_queue (&s2, RAW_QID);
    }

  /* Same id in S2 is S2's own object.  */
  raw_create_buffer (&s2, RAW_MID, NBYTES);
  if (raw_write (&s2, RAW_QID, RAW_MID, p2, NBYTES, &st) || st != 0)
    fail ("S2: WRITE to its own buffer (same id as S1's) failed");
  got = NULL;
  if (raw_read (&s2, RAW_QID, RAW_MID, NBYTES, &st, &got, &got_n) || st != 0
      || got_n != NBYTES || memcmp (got, p2, NBYTES) != 0)
    fail ("S2: reading back its own buffer (same id as S1's) gave wrong data "
          "(status %d, %llu bytes)",
          st, (unsigned long long)got_n);
  free (got);
  got = NULL;
  if (raw_read (&s1, RAW_QID, RAW_MID, NBYTES, &st, &got, &got_n) || st != 0
      || got_n != NBYTES || memcmp (got, p1, NBYTES) != 0)
    fail ("S1's buffer changed after S2 used the same id (status %d)%s", st,
          got && got_n == NBYTES && memcmp (got, p2, NBYTES) == 0
              ? ": it holds S2's data" : "");
  free (got);
  raw_close (&s1);
  raw_close (&s2);
  note ("raw sessions: same ids in two sessions are two objects");
}

/* ------------------------------------------------------------------ */
/* 3./4. OpenCL clients A and B.                                       */

#define NBUF 8
#define BUFBYTES 4096

static const char *client_src
    = "__kernel void stamp (__global uint *b, uint v)\n"
      "{ size_t i = get_global_id (0); b[i] = v ^ (uint)i; }\n";

static void
client_pattern (unsigned char *b, int who, int buf)
{
  pattern (b, BUFBYTES, who ? "B-SESSION-DATA-" : "A-SECRET-SESSION-", 
           (uint32_t)buf * 7u);
}

static void
child_say (int fd, char c)
{
  if (write (fd, &c, 1) != 1)
    _exit (3);
}

static char
child_wait (int fd)
{
  char c = 0;
  if (read (fd, &c, 1) != 1)
    _exit (3); /* the parent went away */
  return c;
}

static void
client_verify (int who, cl_command_queue q, cl_mem *bufs, uint32_t stamp)
{
  unsigned char *want = xmalloc (BUFBYTES), *got = xmalloc (BUFBYTES);
  for (int b = 0; b < NBUF; ++b)
    {
      memset (got, 0, BUFBYTES);
      CHECK (clEnqueueReadBuffer (q, bufs[b], CL_TRUE, 0, BUFBYTES, got, 0,
                                  NULL, NULL));
      if (b == NBUF - 1)
        for (uint32_t i = 0; i < BUFBYTES / 4; ++i)
          {
            uint32_t v = stamp ^ i;
            memcpy (want + 4 * i, &v, 4);
          }
      else
        client_pattern (want, who, b);
      long d = first_diff (got, want, BUFBYTES);
      if (d >= 0)
        fail ("client %c: buffer %d byte %ld is 0x%02x, expected 0x%02x%s",
              'A' + who, b, d, got[d], want[d],
              memmem (got, BUFBYTES, who ? "A-SECRET" : "B-SESSION", 8)
                  ? " -- it holds the OTHER client's data"
                  : "");
    }
  free (want);
  free (got);
}

/* who: 0 = A, 1 = B.  Same OpenCL call sequence in both.  */
static int
client_main (int who, int rfd, int wfd)
{
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q = open_remote_queue (&dev, &ctx);
  cl_program prog = build_program (ctx, dev, client_src, NULL);
  cl_kernel k = create_kernel (prog, "stamp");
  cl_mem bufs[NBUF];
  for (int b = 0; b < NBUF; ++b)
    bufs[b] = create_buffer (ctx, CL_MEM_READ_WRITE, BUFBYTES, NULL);
  const uint32_t stamp = who ? 0xBBBB0000u : 0xAAAA0000u;
  unsigned char *data = xmalloc (BUFBYTES);

  child_say (wfd, 'c'); /* created */
  if (child_wait (rfd) != 'w')
    _exit (3);
  for (int b = 0; b < NBUF - 1; ++b)
    {
      client_pattern (data, who, b);
      CHECK (clEnqueueWriteBuffer (q, bufs[b], CL_TRUE, 0, BUFBYTES, data, 0,
                                   NULL, NULL));
    }
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &bufs[NBUF - 1]));
  CHECK (clSetKernelArg (k, 1, sizeof (stamp), &stamp));
  size_t g = BUFBYTES / 4;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clFinish (q));
  child_say (wfd, 'w'); /* written */
  if (child_wait (rfd) != 'v')
    _exit (3);
  client_verify (who, q, bufs, stamp);
  child_say (wfd, 'v'); /* verified */

  if (who == 0)
    {
      /* A keeps its session while the parent attacks it.  */
      if (child_wait (rfd) != 'r')
        _exit (3);
      client_verify (who, q, bufs, stamp);
      /* and the session still computes */
      const uint32_t stamp2 = 0xA2A20000u;
      CHECK (clSetKernelArg (k, 1, sizeof (stamp2), &stamp2));
      CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
      CHECK (clFinish (q));
      client_verify (who, q, bufs, stamp2);
      child_say (wfd, 'v');
    }
  for (int b = 0; b < NBUF; ++b)
    clReleaseMemObject (bufs[b]);
  clReleaseKernel (k);
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  free (data);
  return 0;
}

typedef struct
{
  pid_t pid;
  int to, from; /* parent's ends */
} child_t;

static child_t child_a = { -1, -1, -1 }, child_b = { -1, -1, -1 };

static child_t
spawn_client (int who)
{
  int down[2], up[2];
  if (pipe (down) || pipe (up))
    fail ("pipe: %s", strerror (errno));
  pid_t p = fork ();
  if (p < 0)
    fail ("fork: %s", strerror (errno));
  if (p == 0)
    {
      close (down[1]);
      close (up[0]);
      /* The parent's atexit handler must not kill a sibling from here. */
      if (child_a.to >= 0)
        {
          close (child_a.to);
          close (child_a.from);
        }
      child_a.pid = child_b.pid = -1;
      watchdog (120, who ? "client B" : "client A");
      exit (client_main (who, down[0], up[1]));
    }
  close (down[0]);
  close (up[1]);
  child_t c = { p, down[1], up[0] };
  return c;
}

static void
parent_say (child_t *c, char ch, const char *who)
{
  if (write (c->to, &ch, 1) != 1)
    fail ("client %s went away (write to its pipe failed)", who);
}

static void
parent_expect (child_t *c, char ch, const char *who, const char *stage)
{
  struct pollfd pfd = { c->from, POLLIN, 0 };
  int r;
  do
    r = poll (&pfd, 1, 90000);
  while (r < 0 && errno == EINTR);
  char got = 0;
  if (r == 0)
    fail ("client %s did not report '%s' within 90 s", who, stage);
  if (read (c->from, &got, 1) != 1)
    fail ("client %s exited before '%s' (see its message above)", who,
          stage);
  if (got != ch)
    fail ("client %s said '%c', expected '%c'", who, got, ch);
}

static void
reap (child_t *c, const char *who)
{
  int status;
  for (int i = 0; i < 600; ++i)
    {
      pid_t p = waitpid (c->pid, &status, WNOHANG);
      if (p == c->pid)
        {
          close (c->to);
          close (c->from);
          if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
            fail ("client %s ended with %s %d", who,
                  WIFSIGNALED (status) ? "signal" : "status",
                  WIFSIGNALED (status) ? WTERMSIG (status)
                                       : WEXITSTATUS (status));
          return;
        }
      usleep (100000);
    }
  kill (c->pid, SIGKILL);
  waitpid (c->pid, &status, 0);
  fail ("client %s did not exit within 60 s", who);
}

static void
kill_children (void)
{
  if (child_a.pid > 0)
    kill (child_a.pid, SIGKILL);
  if (child_b.pid > 0)
    kill (child_b.pid, SIGKILL);
}

/* 4. From a fresh raw session, name every small buffer id.  */
static void
scan_foreign_ids (void)
{
  const uint32_t first = 1, last = 4096;
  unsigned char junk[NBYTES];
  memset (junk, 0x5A, sizeof (junk));
  raw_session s;
  raw_open (&s);
  raw_create_queue (&s, RAW_QID);
  unsigned errors = 0, closes = 0, wr_errors = 0, wr_closes = 0;

  for (uint32_t i = first; i <= last; ++i)
    {
      uint64_t mid = (uint64_t)i << 8;
      int32_t st = 0;
      unsigned char *got = NULL;
      uint64_t got_n = 0;
      int r = raw_read (&s, RAW_QID, mid, NBYTES, &st, &got, &got_n);
      if (r == IO_OK)
        {
          if (st >= 0)
            fail ("READ of foreign buffer id 0x%llx (i=%u) in a fresh "
                  "session succeeded (status %d, %llu bytes)%s",
                  (unsigned long long)mid, i, st, (unsigned long long)got_n,
                  got && got_n && memmem (got, got_n, "A-SECRET", 8)
                      ? ": client A's data leaked" : "");
          if (got && got_n && memmem (got, got_n, "A-SECRET", 8))
            fail ("failed READ of id 0x%llx still carried client A's data",
                  (unsigned long long)mid);
          ++errors;
        }
      else
        {
          ++closes;
          raw_close (&s);
          raw_open (&s);
          raw_create_queue (&s, RAW_QID);
        }
      free (got);

      r = raw_write (&s, RAW_QID, mid, junk, NBYTES, &st);
      if (r == IO_OK)
        {
          if (st >= 0)
            fail ("WRITE to foreign buffer id 0x%llx in a fresh session "
                  "succeeded",
                  (unsigned long long)mid);
          ++wr_errors;
        }
      else
        {
          ++wr_closes;
          raw_close (&s);
          raw_open (&s);
          raw_create_queue (&s, RAW_QID);
        }

      pocl_remote_release rel = { mid };
      if (raw_send (s.cmd, POCL_RMSG_FREE_BUFFER, 0, &rel, sizeof (rel), NULL,
                    0))
        {
          raw_close (&s);
          raw_open (&s);
          raw_create_queue (&s, RAW_QID);
        }
    }
  /* A synchronous request after the releases: they have all been handled. */
  pocl_remote_create_queue cq;
  memset (&cq, 0, sizeof (cq));
  cq.queue_id = RAW_QID + 1;
  int32_t st;
  if (raw_request (&s, POCL_RMSG_CREATE_QUEUE, &cq, sizeof (cq), NULL, 0, &st)
      || st != CL_SUCCESS)
    {
      /* The session may have been closed for the releases: fine, but pocld
         must answer a new one.  */
      raw_close (&s);
      raw_open (&s);
    }
  raw_close (&s);
  note ("scan of ids 1..%u << 8 from another session: READ -> %u error "
        "completions, %u closed connections; WRITE -> %u errors, %u closed; "
        "FREE_BUFFER sent for each",
        last, errors, closes, wr_errors, wr_closes);
}

static void
check_opencl_clients (void)
{
  atexit (kill_children);
  child_a = spawn_client (0);
  child_b = spawn_client (1);
  parent_expect (&child_a, 'c', "A", "created");
  parent_expect (&child_b, 'c', "B", "created");
  parent_say (&child_a, 'w', "A");
  parent_expect (&child_a, 'w', "A", "written");
  parent_say (&child_b, 'w', "B");
  parent_expect (&child_b, 'w', "B", "written");
  parent_say (&child_a, 'v', "A");
  parent_expect (&child_a, 'v', "A", "verified");
  parent_say (&child_b, 'v', "B");
  parent_expect (&child_b, 'v', "B", "verified");
  reap (&child_b, "B");
  child_b.pid = -1;
  note ("OpenCL clients A and B with identical object ids each read back "
        "only their own data; B disconnected");

  scan_foreign_ids ();

  parent_say (&child_a, 'r', "A");
  parent_expect (&child_a, 'v', "A", "re-verified after the scan");
  reap (&child_a, "A");
  child_a.pid = -1;
  note ("client A's buffers and kernel intact after the foreign-id scan");
}

int
main (void)
{
  const char *par = getenv ("POCL_REMOTE0_PARAMETERS");
  if (par == NULL)
    fail ("POCL_REMOTE0_PARAMETERS is not set (run through run_remote.sh)");
  const char *colon = strrchr (par, ':');
  if (colon == NULL || (size_t)(colon - par) >= sizeof (server_host))
    fail ("cannot parse POCL_REMOTE0_PARAMETERS=%s", par);
  memcpy (server_host, par, (size_t)(colon - par));
  server_host[colon - par] = 0;
  long port = strtol (colon + 1, NULL, 10);
  if (port <= 0 || port > 65534)
    fail ("bad port in POCL_REMOTE0_PARAMETERS=%s", par);
  server_port = (uint16_t)port;
  signal (SIGPIPE, SIG_IGN);

  /* The parent never touches OpenCL (it forks OpenCL clients).  */
  watchdog (280, "the session-isolation checks");
  check_handshakes ();
  check_raw_sessions ();
  check_opencl_clients ();
  check_still_serves ("the end");
  printf ("%s: PASS: bad handshakes refused, sessions isolated (raw and "
          "OpenCL), pocld still serving\n",
          TEST_NAME);
  return 0;
}
