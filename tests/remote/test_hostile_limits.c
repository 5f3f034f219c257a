/* test_hostile_limits.c - pocld's limits on what one client may make its
   session hold (doc/security.md), over raw sockets (raw_client.c).

   Usage: test_hostile_limits PORT POCLD_PID POCLD_LOG, against a pocld of its
   own started with --max-pending 64 (test_hostile_limits.sh).  In order:

   1. Pending commands: 64 markers wait on a foreign event nobody reported;
      the 65th command completes with CL_OUT_OF_RESOURCES; once the event is
      reported the 64 complete, and the next command runs again.
   2. READ_RECT whose region lies outside the 4 KiB buffer (by one byte, and
      by 2^40 bytes of staging the client asks for) completes with
      CL_INVALID_VALUE, never CL_OUT_OF_HOST_MEMORY (staging was sized
      before the check); an in-bounds one returns its bytes.
   3. The same for READ_IMAGE on a 16x16 image.
   4. 1,000,000 NOTIFY_EVENTs for distinct events: the session process grows
      by less than 40 MB (unbounded, one table entry of about 100 bytes
      each, it would grow by some 100 MB) and still answers.
   5. BUILD_PROGRAM kind BUILTIN with names the device does not offer, none,
      only separators, a NUL byte, 2 MiB of one name, 70000 names:
      CL_INVALID_VALUE and a log line each; a good list builds.
      BUILD_PROGRAM kind IL with bytes that are not SPIR-V, or a module cut
      in its header: CL_INVALID_VALUE and a log line each, and
      CL_INVALID_BINARY for the cut module as a binary; a 3-byte
      specialization constant closes that session (malformed).
   6. Commands waiting on more than 65536 unreported foreign events: the
      session is closed, with a log line.
   7. A WRITE whose DATA stops after 1 of 8 MiB: the connection is closed,
      with a log line, and the write never completes.
   8. A new session is served as before.

   PASS only when all hold.  */

#define TEST_NAME "hostile_limits"
#include "remote_test_util.c"

#include "raw_client.c"

#include <dirent.h>

static pid_t pocld_pid;
static const char *pocld_log;

/* VmRSS in KiB of pocld's only child: the one session process.  */
static long
session_rss_kb (void)
{
  DIR *d = opendir ("/proc");
  struct dirent *e;
  long rss = -1;
  int found = 0;
  while (d && (e = readdir (d)))
    {
      char path[300], line[256];
      snprintf (path, sizeof (path), "/proc/%s/status", e->d_name);
      FILE *f = fopen (path, "r");
      if (f == NULL)
        continue;
      long ppid = -1, kb = -1;
      while (fgets (line, sizeof (line), f))
        {
          sscanf (line, "PPid: %ld", &ppid);
          sscanf (line, "VmRSS: %ld", &kb);
        }
      fclose (f);
      if (ppid == pocld_pid && kb >= 0)
        {
          rss = kb;
          ++found;
        }
    }
  if (d)
    closedir (d);
  if (found != 1)
    fail ("expected one session process under pocld %d, found %d",
          (int)pocld_pid, found);
  return rss;
}

/* Whether pocld's log has a line containing `what`.  */
static int
logged (const char *what)
{
  FILE *f = fopen (pocld_log, "r");
  char line[512];
  int found = 0;
  while (f && fgets (line, sizeof (line), f))
    found |= strstr (line, what) != NULL;
  if (f)
    fclose (f);
  return found;
}

/* Reads until the COMPLETION of `id`; other completions are counted in
   *others (if not NULL, each must be CL_COMPLETE).  */
static int32_t
await_completion (raw_session *s, uint64_t id, int *others)
{
  for (;;)
    {
      raw_msg m;
      int r = raw_recv (s->cmd, &m, 20000);
      if (r)
        fail ("waiting for the completion of %llu: %s",
              (unsigned long long)id,
              r == IO_TIMEOUT ? "timeout (20 s)" : "connection closed");
      free (m.payload);
      if (m.h.type != POCL_RMSG_COMPLETION)
        continue;
      if (m.h.id == id)
        return m.body.completion.status;
      if (others == NULL)
        fail ("completion of %llu before that of %llu",
              (unsigned long long)m.h.id, (unsigned long long)id);
      if (m.body.completion.status != CL_COMPLETE)
        fail ("command %llu completed with %d", (unsigned long long)m.h.id,
              m.body.completion.status);
      ++*others;
    }
}

static void
send_marker (raw_session *s, uint64_t id, const pocl_remote_wait *w,
             uint32_t n)
{
  pocl_remote_cmd c = { 1, n, 0 };
  if (raw_send (s->cmd, POCL_RMSG_MARKER, id, &c, sizeof (c), w,
                n * sizeof (*w)))
    fail ("sending marker %llu: connection closed", (unsigned long long)id);
}

static void
pending_limit (raw_session *s)
{
  pocl_remote_wait w = { 0x7777, POCL_REMOTE_WAIT_FOREIGN, 0 };
  for (uint64_t i = 0; i < 64; ++i)
    send_marker (s, 5000 + i, &w, 1);
  send_marker (s, 6000, NULL, 0);
  int32_t st = await_completion (s, 6000, NULL);
  if (st != CL_OUT_OF_RESOURCES)
    fail ("the 65th pending command completed with %d (%s), expected "
          "CL_OUT_OF_RESOURCES",
          st, clerr (st));
  pocl_remote_notify n = { 0x7777, CL_COMPLETE, 0 };
  if (raw_send (s->cmd, POCL_RMSG_NOTIFY_EVENT, 0, &n, sizeof (n), NULL, 0))
    fail ("NOTIFY_EVENT: connection closed");
  for (int done = 0; done < 64;)
    {
      raw_msg m;
      int r = raw_recv (s->cmd, &m, 20000);
      if (r)
        fail ("after the report, %d of 64 completed: %s", done,
              r == IO_TIMEOUT ? "timeout (20 s)" : "connection closed");
      free (m.payload);
      if (m.h.type != POCL_RMSG_COMPLETION)
        continue;
      if (m.h.id < 5000 || m.h.id >= 5064
          || m.body.completion.status != CL_COMPLETE)
        fail ("after the report: completion of %llu with %d",
              (unsigned long long)m.h.id, m.body.completion.status);
      ++done;
    }
  /* A completion is sent just before its command leaves the table, so a
     command right after the 64th may still be refused: a later one runs. */
  for (uint64_t id = 6001;; ++id)
    {
      send_marker (s, id, NULL, 0);
      st = await_completion (s, id, NULL);
      if (st == CL_COMPLETE)
        break;
      if (st != CL_OUT_OF_RESOURCES || id == 6100)
        fail ("commands after the 64 completed: %d (%s)", st, clerr (st));
    }
  note ("64 pending commands allowed, the 65th refused, all run once "
       "reported");
}

static int32_t
read_rect (raw_session *s, const uint64_t o[3], const uint64_t r[3],
           uint64_t row, uint64_t slice, uint32_t type, uint64_t src,
           uint64_t unit, uint64_t *got)
{
  pocl_remote_mem_cmd mc;
  memset (&mc, 0, sizeof (mc));
  mc.cmd.queue_id = 1;
  mc.src_id = src;
  memcpy (mc.src_origin, o, sizeof (mc.src_origin));
  memcpy (mc.region, r, sizeof (mc.region));
  mc.src_row_pitch = row;
  mc.src_slice_pitch = slice;
  mc.data_size = r[0] * r[1] * r[2] * unit;
  int32_t st;
  unsigned char *data = NULL;
  if (raw_command (s, type, &mc, sizeof (mc), NULL, 0, &st, &data, got))
    fail ("read (type %u): connection closed", type);
  free (data);
  return st;
}

static void
rect_bounds (raw_session *s)
{
  raw_create_buffer (s, 0x100, 4096);
  uint64_t zero[3] = { 0, 0, 0 }, one[3] = { 1, 0, 0 }, got = 0;
  uint64_t ok[3] = { 16, 4, 2 }, edge[3] = { 64, 64, 1 };
  uint64_t huge[3] = { 1u << 20, 1u << 10, 1u << 10 };
  int32_t st = read_rect (s, zero, ok, 64, 256, POCL_RMSG_READ_RECT, 0x100,
                          1, &got);
  if (st != CL_COMPLETE || got != 128)
    fail ("in-bounds READ_RECT: status %d, %llu bytes", st,
          (unsigned long long)got);
  st = read_rect (s, one, edge, 64, 0, POCL_RMSG_READ_RECT, 0x100, 1, &got);
  if (st != CL_INVALID_VALUE)
    fail ("READ_RECT one byte past the buffer: %d (%s), expected "
          "CL_INVALID_VALUE",
          st, clerr (st));
  st = read_rect (s, zero, huge, 1u << 20, 1ull << 30, POCL_RMSG_READ_RECT,
                  0x100, 1, &got);
  if (st != CL_INVALID_VALUE)
    fail ("READ_RECT of 2^40 bytes from a 4 KiB buffer: %d (%s), expected "
          "CL_INVALID_VALUE",
          st, clerr (st));

  pocl_remote_create_image ci;
  memset (&ci, 0, sizeof (ci));
  ci.mem_id = 0x300;
  ci.flags = CL_MEM_READ_WRITE;
  ci.image_type = CL_MEM_OBJECT_IMAGE2D;
  ci.channel_order = CL_RGBA;
  ci.channel_type = CL_UNORM_INT8;
  ci.width = ci.height = 16;
  int32_t rs;
  if (raw_request (s, POCL_RMSG_CREATE_IMAGE, &ci, sizeof (ci), NULL, 0, &rs)
      || rs != CL_SUCCESS)
    fail ("CREATE_IMAGE 16x16 RGBA8 refused (%d)", rs);
  uint64_t all[3] = { 16, 16, 1 }, ihuge[3] = { 1u << 19, 1u << 19, 1 };
  st = read_rect (s, zero, all, 0, 0, POCL_RMSG_READ_IMAGE, 0x300, 4, &got);
  if (st != CL_COMPLETE || got != 1024)
    fail ("whole READ_IMAGE: status %d, %llu bytes", st,
          (unsigned long long)got);
  uint64_t shifted[3] = { 1, 0, 0 };
  st = read_rect (s, shifted, all, 0, 0, POCL_RMSG_READ_IMAGE, 0x300, 4,
                  &got);
  if (st != CL_INVALID_VALUE)
    fail ("READ_IMAGE one pixel past the image: %d (%s)", st, clerr (st));
  st = read_rect (s, zero, ihuge, 0, 0, POCL_RMSG_READ_IMAGE, 0x300, 4, &got);
  if (st != CL_INVALID_VALUE)
    fail ("READ_IMAGE of 2^40 bytes from a 16x16 image: %d (%s), expected "
          "CL_INVALID_VALUE",
          st, clerr (st));
  note ("rect and image reads outside their objects refused before staging");
}

static void
notify_flood (raw_session *s)
{
  const size_t per = sizeof (pocl_remote_hdr) + sizeof (pocl_remote_notify);
  const size_t batch = 100000;
  unsigned char *buf = xmalloc (per * batch);
  long before = session_rss_kb ();
  for (uint64_t k = 0; k < 10; ++k)
    {
      for (size_t i = 0; i < batch; ++i)
        {
          pocl_remote_hdr h = { POCL_RMSG_NOTIFY_EVENT,
                                sizeof (pocl_remote_notify), 0, 0 };
          pocl_remote_notify n = { 1000000 + k * batch + i, CL_COMPLETE, 0 };
          memcpy (buf + i * per, &h, sizeof (h));
          memcpy (buf + i * per + sizeof (h), &n, sizeof (n));
        }
      if (send_all (s->cmd, buf, per * batch))
        fail ("NOTIFY_EVENT flood: connection closed after %llu",
              (unsigned long long)(k * batch));
    }
  free (buf);
  /* the marker completes after every NOTIFY before it was handled */
  send_marker (s, 7000, NULL, 0);
  int32_t st = await_completion (s, 7000, NULL);
  if (st != CL_COMPLETE)
    fail ("marker after the flood: %d", st);
  long after = session_rss_kb ();
  note ("1,000,000 NOTIFY_EVENTs: session process %ld -> %ld KiB", before,
       after);
  /* A sanitizer's allocator keeps freed memory (ASan's quarantine): there
     the growth says nothing; the plain run in the same CI checks it.  */
  if (getenv ("REMOTE_TEST_SANITIZER"))
    note ("memory bound not checked under %s",
          getenv ("REMOTE_TEST_SANITIZER"));
  else if (after - before > 40 * 1024)
    fail ("the session grew by %ld KiB for 1,000,000 reported events",
          after - before);
}

static void
foreign_cap (raw_session *s)
{
  static pocl_remote_wait w[4096];
  int closed = 0;
  for (uint64_t c = 0; c < 17 && !closed; ++c)
    {
      for (uint32_t i = 0; i < 4096; ++i)
        {
          w[i].event_id = 2000000000ull + c * 4096 + i;
          w[i].origin = POCL_REMOTE_WAIT_FOREIGN;
          w[i].reserved = 0;
        }
      pocl_remote_cmd mk = { 1, 4096, 0 };
      closed = raw_send (s->cmd, POCL_RMSG_MARKER, 8000 + c, &mk, sizeof (mk),
                         w, sizeof (w))
               != IO_OK;
    }
  for (;;)
    {
      raw_msg m;
      int r = raw_recv (s->cmd, &m, 20000);
      if (r == IO_CLOSED)
        break;
      if (r == IO_TIMEOUT)
        fail ("pocld kept a session whose commands wait on 69632 unreported "
              "foreign events");
      free (m.payload);
      if (m.h.type == POCL_RMSG_COMPLETION && m.h.id >= 8000)
        fail ("a marker waiting on unreported events completed");
    }
  /* the log line is written before the close */
  if (!logged ("unreported foreign events"))
    fail ("no log line for the refused session in %s", pocld_log);
  note ("a session waiting on over 65536 unreported events was closed");
}

/* A WRITE whose bytes stop after 1 of 8 MiB (the data socket is closed):
   pocld writes what came as it comes, so it must log the cut and drop the
   connection (for a resume that will not come) rather than wait for the
   bytes, and never report the write complete.  */
/* BUILD_PROGRAM with a binary pocld did not make for this device: bytes
   without its header, a header naming another device, a checksum that does
   not match.  Each gets CL_INVALID_BINARY and a log line, and no vendor
   library sees it (NVIDIA's aborts the process on a foreign binary).  */
static void
foreign_binaries (raw_session *s)
{
  struct
  {
    pocl_remote_build_program bp;
    pocl_remote_binary_header bh;
    unsigned char native[64];
  } m;
  const char *what[3] = { "headerless", "another device's", "damaged" };
  for (int i = 0; i < 3; ++i)
    for (uint32_t kind = POCL_REMOTE_BUILD_BINARY;
         kind <= POCL_REMOTE_BUILD_LOAD; kind += POCL_REMOTE_BUILD_LOAD
                                                 - POCL_REMOTE_BUILD_BINARY)
      {
        memset (&m, 0x5a, sizeof (m));
        memset (&m.bp, 0, sizeof (m.bp));
        m.bp.prog_id = 0x700 + (uint64_t)i;
        m.bp.kind = kind;
        m.bp.body_len = sizeof (m.bh) + sizeof (m.native);
        if (i > 0)
          {
            memcpy (m.bh.magic, POCL_REMOTE_BINARY_MAGIC, 8);
            m.bh.size = sizeof (m.native);
            m.bh.checksum = 0x1234;
          }
        int32_t st = 0;
        if (raw_request (s, POCL_RMSG_BUILD_PROGRAM, &m.bp, sizeof (m.bp),
                         &m.bh, m.bp.body_len, &st))
          fail ("BUILD_PROGRAM with a %s binary: connection closed", what[i]);
        if (st != CL_INVALID_BINARY)
          fail ("a %s binary (kind %u) got %d (%s), expected "
                "CL_INVALID_BINARY",
                what[i], kind, st, clerr (st));
      }
  if (!logged ("refused: binary is none of this server's")
      || !logged ("refused: binary was made for another platform or device"))
    fail ("no log lines for the refused binaries in %s", pocld_log);
  /* an id of its own: pocld may still hold the earlier marker's 7000 for
     a moment after its COMPLETION, and refuses an id in use */
  send_marker (s, 7001, NULL, 0);
  if (await_completion (s, 7001, NULL) != CL_COMPLETE)
    fail ("the session is not served after the refused binaries");
  note ("binaries without pocld's header, for another device or damaged: "
        "CL_INVALID_BINARY, session served");
}

/* BUILD_PROGRAM kind BUILTIN with name lists no OpenCL client sends: each
   is CL_INVALID_VALUE with a log line before the runtime sees it, and the
   session goes on; a good list builds.  */
static void
builtin_names (raw_session *s)
{
  static char big[2u << 20];
  const struct
  {
    const char *what, *names, *log;
    uint64_t len;
  } cases[] = {
    { "a name the device does not offer", "pocl.add.i8;pocl.no.such",
      "built-in kernel 'pocl.no.such' is not one of the device's", 0 },
    { "no names", "", "built-in kernel names of 0 bytes refused", 0 },
    { "separators only", ";;;", "built-in kernel names without a name", 0 },
    { "a NUL byte", "pocl.add.i8\0pocl.add.i8",
      "built-in kernel names with a NUL byte refused", 23 },
    { "2 MiB of one name", big, "built-in kernel names of 2097152 bytes",
      sizeof (big) },
    { "70000 names", NULL, "over 65536 built-in kernel names refused", 0 },
  };
  const char one[] = "pocl.add.i8;";
  char *many = xmalloc (70000 * (sizeof (one) - 1));
  for (int i = 0; i < 70000; ++i)
    memcpy (many + i * (sizeof (one) - 1), one, sizeof (one) - 1);
  memset (big, 'a', sizeof (big));
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); ++i)
    {
      const char *names = cases[i].names ? cases[i].names : many;
      pocl_remote_build_program bp;
      memset (&bp, 0, sizeof (bp));
      bp.prog_id = 0x800 + i;
      bp.kind = POCL_REMOTE_BUILD_BUILTIN;
      bp.body_len = cases[i].len      ? cases[i].len
                    : cases[i].names ? strlen (names)
                                     : 70000 * (sizeof (one) - 1);
      int32_t st = 0;
      if (raw_request (s, POCL_RMSG_BUILD_PROGRAM, &bp, sizeof (bp), names,
                       bp.body_len, &st))
        fail ("BUILD_PROGRAM with built-in kernel names, %s: connection "
              "closed",
              cases[i].what);
      if (st != CL_INVALID_VALUE)
        fail ("built-in kernel names, %s: %d (%s), expected "
              "CL_INVALID_VALUE",
              cases[i].what, st, clerr (st));
      if (!logged (cases[i].log))
        fail ("no log line '%s' in %s", cases[i].log, pocld_log);
    }
  free (many);
  pocl_remote_build_program bp;
  memset (&bp, 0, sizeof (bp));
  bp.prog_id = 0x8ff;
  bp.kind = POCL_REMOTE_BUILD_BUILTIN;
  bp.body_len = strlen ("pocl.add.i8");
  int32_t st = 0;
  if (raw_request (s, POCL_RMSG_BUILD_PROGRAM, &bp, sizeof (bp),
                   "pocl.add.i8", bp.body_len, &st)
      || st != CL_SUCCESS)
    fail ("a program of built-in kernel pocl.add.i8 did not build: %d (%s)",
          st, clerr (st));
  note ("built-in kernel names not offered, none, separators only, a NUL, "
        "2 MiB, 70000 names: CL_INVALID_VALUE; pocl.add.i8 builds");
}

static void
write_cut (void)
{
  const uint64_t size = 8u << 20;
  static unsigned char part[1u << 20];
  raw_session s;
  raw_open (&s);
  raw_create_queue (&s, 1);
  raw_create_buffer (&s, 0x500, size);
  pocl_remote_mem_cmd mc;
  mem_cmd_init (&mc, 1, 0, 0x500, size);
  mc.cmd.flags = POCL_RCMD_DATA_ON_DATA_SOCKET;
  pocl_remote_hdr h = { POCL_RMSG_DATA, 0, size, 9000 };
  if (raw_send (s.cmd, POCL_RMSG_WRITE, 9000, &mc, sizeof (mc), NULL, 0)
      || send_all (s.data, &h, sizeof (h))
      || send_all (s.data, part, sizeof (part)))
    fail ("sending a WRITE and its first MiB: connection closed");
  shutdown (s.data, SHUT_WR);
  for (;;)
    {
      raw_msg m;
      int r = raw_recv (s.cmd, &m, 20000);
      if (r == IO_CLOSED)
        break;
      if (r == IO_TIMEOUT)
        fail ("pocld kept a session whose write's bytes were cut");
      free (m.payload);
      if (m.h.type == POCL_RMSG_COMPLETION && m.h.id == 9000
          && m.body.completion.status == CL_COMPLETE)
        fail ("a write whose bytes were cut completed");
    }
  if (!logged ("DATA for event 9000 cut after"))
    fail ("no log line for the cut write in %s", pocld_log);
  raw_close (&s);
  note ("the connection of a write whose bytes were cut was closed");
}

/* BUILD_PROGRAM kind IL with bodies no client sends: bytes that are not
   SPIR-V and a module cut inside its header are CL_INVALID_VALUE with a log
   line before the runtime sees them, and the session goes on; a
   specialization constant of 3 bytes is a malformed message, which closes
   its own session only.  */
static void
il_refused (raw_session *s)
{
  struct
  {
    uint32_t words[16];
    pocl_remote_spec_const sc;
  } m;
  const struct
  {
    const char *what;
    uint32_t magic;
    uint64_t len;
  } cases[] = {
    { "bytes that are not SPIR-V", 0x5a5a5a5a, sizeof (m.words) },
    { "a module cut inside its header", 0x07230203, 8 },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); ++i)
    {
      pocl_remote_build_program bp;
      memset (&bp, 0, sizeof (bp));
      memset (&m, 0, sizeof (m));
      m.words[0] = cases[i].magic;
      bp.prog_id = 0x900 + i;
      bp.kind = POCL_REMOTE_BUILD_IL;
      bp.body_len = cases[i].len;
      int32_t st = 0;
      if (raw_request (s, POCL_RMSG_BUILD_PROGRAM, &bp, sizeof (bp), &m,
                       bp.body_len, &st))
        fail ("BUILD_PROGRAM kind IL, %s: connection closed", cases[i].what);
      if (st != CL_INVALID_VALUE)
        fail ("IL, %s: %d (%s), expected CL_INVALID_VALUE", cases[i].what, st,
              clerr (st));
    }
  if (!logged ("IL of 64 bytes is not SPIR-V")
      || !logged ("IL of 8 bytes is not SPIR-V"))
    fail ("no log lines for the refused IL in %s", pocld_log);
  /* the same cut module as a binary: no vendor library sees it either */
  pocl_remote_build_program bb;
  memset (&bb, 0, sizeof (bb));
  memset (&m, 0, sizeof (m));
  m.words[0] = 0x07230203;
  bb.prog_id = 0x910;
  bb.kind = POCL_REMOTE_BUILD_BINARY;
  bb.body_len = 6;
  int32_t bst = 0;
  if (raw_request (s, POCL_RMSG_BUILD_PROGRAM, &bb, sizeof (bb), &m,
                   bb.body_len, &bst))
    fail ("BUILD_PROGRAM with a cut SPIR-V binary: connection closed");
  if (bst != CL_INVALID_BINARY
      || !logged ("SPIR-V binary refused: no whole module"))
    fail ("a cut SPIR-V binary: %d (%s), expected CL_INVALID_BINARY and a "
          "log line",
          bst, clerr (bst));
  send_marker (s, 7002, NULL, 0);
  if (await_completion (s, 7002, NULL) != CL_COMPLETE)
    fail ("the session is not served after the refused IL");

  raw_session t;
  raw_open (&t);
  pocl_remote_build_program bp;
  memset (&bp, 0, sizeof (bp));
  memset (&m, 0, sizeof (m));
  m.words[0] = 0x07230203;
  m.sc.id = 5;
  m.sc.size = 3;
  bp.prog_id = 0x9ff;
  bp.kind = POCL_REMOTE_BUILD_IL;
  bp.count = 1;
  bp.body_len = sizeof (m.words);
  int32_t st = 0;
  if (raw_request (&t, POCL_RMSG_BUILD_PROGRAM, &bp, sizeof (bp), &m,
                   sizeof (m), &st)
      == IO_OK)
    fail ("a 3-byte specialization constant was answered (%d %s), not "
          "refused as malformed",
          st, clerr (st));
  raw_close (&t);
  if (!logged ("BUILD_PROGRAM: malformed payload (kind 6, count 1)"))
    fail ("no log line for the malformed IL build in %s", pocld_log);
  note ("IL that is not SPIR-V or is cut: CL_INVALID_VALUE, as a binary "
        "CL_INVALID_BINARY, session served; a 3-byte constant closes its "
        "session");
}

int
main (int argc, char **argv)
{
  if (argc != 4)
    {
      fprintf (stderr, "usage: %s PORT POCLD_PID POCLD_LOG\n", argv[0]);
      return 2;
    }
  server_port = (uint16_t)atoi (argv[1]);
  pocld_pid = (pid_t)atoi (argv[2]);
  pocld_log = argv[3];
  alarm (300);

  raw_session s;
  raw_open (&s);
  raw_create_queue (&s, 1);
  pending_limit (&s);
  rect_bounds (&s);
  notify_flood (&s);
  foreign_binaries (&s);
  builtin_names (&s);
  il_refused (&s);
  foreign_cap (&s);
  raw_close (&s);
  write_cut ();

  raw_session t;
  raw_open (&t);
  raw_create_queue (&t, 1);
  send_marker (&t, 1, NULL, 0);
  if (await_completion (&t, 1, NULL) != CL_COMPLETE)
    fail ("a new session after the refused one is not served");
  raw_close (&t);
  printf ("%s: PASS: pocld's per-session limits hold\n", TEST_NAME);
  return 0;
}
