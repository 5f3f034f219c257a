/* test_hostile_peer.c - what pocld does with a peer server's PEER_DATA of
   protocol 16 (a payload whose status follows it, doc/protocol.md), the peer
   being this program on a raw peer link of the fixture's session
   (raw_client.c): every byte from a peer is checked like a client's.

   Each case attaches a peer link of its own index, sends MIGRATE_IN for a
   4 KiB buffer from that peer on the client's connection, then PEER_DATA as
   the case says, and checks the migration's COMPLETION:

   1. the bytes with STATUS_FOLLOWS: no COMPLETION until the status comes;
      then CL_COMPLETE, and the buffer holds the bytes;
   2. the bytes, then a status of CL_OUT_OF_RESOURCES: the migration
      completes with it;
   3. a status with no STATUS_FOLLOWS payload before it, 4. a status that
      carries bytes, 5. a status at an offset other than the total, 6. a
      status before all the bytes came, 7. an unknown flag: each a
      violation, the link is closed and the migration completes with
      CL_DEVICE_NOT_AVAILABLE.

   8. A link the peer has sent nothing on: a CONNECT_PEER for that peer
      gets CL_DEVICE_NOT_AVAILABLE (its HELLO_REPLY may never have reached
      the peer); once the peer sent on it, CL_SUCCESS.

   9. A READ sent right behind a MIGRATE_IN on its in-order queue, without
      waits (as the client sends a command behind another of the same
      queue): it completes only after the bytes came, and returns them.

   Then the session still serves.  Usage (through run_remote.sh):
   test_hostile_peer  */

#define TEST_NAME "hostile_peer"
#include "remote_test_util.c"

#include "raw_client.c"

#define QID 1ull
#define BYTES 4096u

/* A peer link of index `index` attached to the session.  */
static int
attach_peer (const raw_session *s, uint32_t index)
{
  int fd
      = raw_connect ((uint16_t)(server_port + POCL_REMOTE_PEER_PORT_OFFSET));
  pocl_remote_hello_reply rep;
  int32_t st = raw_hello_as (fd, POCL_REMOTE_ROLE_PEER, s->sid,
                             POCL_REMOTE_PEER_HELLO_INDEX (index, 0), &rep);
  if (st != CL_SUCCESS)
    fail ("a peer link of index %u was refused: %d", index, st);
  return fd;
}

/* MIGRATE_IN of buffer mid from peer `index`: its event id.  */
static uint64_t
migrate_in (raw_session *s, uint64_t mid, uint32_t index)
{
  pocl_remote_migrate m;
  memset (&m, 0, sizeof (m));
  m.cmd.queue_id = QID;
  m.dst_id = mid;
  m.size = BYTES;
  m.peer = index;
  uint64_t id = ++s->next_id;
  if (raw_send (s->cmd, POCL_RMSG_MIGRATE_IN, id, &m, sizeof (m), NULL, 0))
    fail ("MIGRATE_IN: the connection closed");
  return id;
}

static void
peer_data (int fd, uint64_t id, int32_t status, uint32_t flags,
           uint64_t offset, const void *bytes, uint64_t n)
{
  pocl_remote_peer_data pd;
  memset (&pd, 0, sizeof (pd));
  pd.status = status;
  pd.flags = flags;
  pd.offset = offset;
  pd.total = BYTES;
  /* The server may have closed the link already: what it does then is
     what the case checks.  */
  (void)raw_send (fd, POCL_RMSG_PEER_DATA, id, &pd, sizeof (pd), bytes, n);
}

/* The COMPLETION of event id within timeout_ms: its status, or 1 if none
   came.  */
static int32_t
completion (raw_session *s, uint64_t id, int timeout_ms)
{
  for (;;)
    {
      raw_msg m;
      int r = raw_recv (s->cmd, &m, timeout_ms);
      if (r == IO_TIMEOUT)
        return 1;
      if (r)
        fail ("the client's connection closed waiting for migration %llu",
              (unsigned long long)id);
      free (m.payload);
      if (m.h.type == POCL_RMSG_COMPLETION && m.h.id == id)
        return m.body.completion.status;
    }
}

/* Whether the server closes the peer link within 10 s (what it sends before
   is read and dropped).  */
static int
closed (int fd)
{
  for (;;)
    {
      raw_msg m;
      int r = raw_recv (fd, &m, 10000);
      if (r == IO_CLOSED)
        return 1;
      if (r == IO_TIMEOUT)
        return 0;
      free (m.payload);
    }
}

static unsigned char pattern[BYTES];

/* Cases 3-7: a violation.  */
static void
violation (raw_session *s, uint32_t index, uint64_t mid, const char *what)
{
  int fd = attach_peer (s, index);
  uint64_t id = migrate_in (s, mid, index);
  const uint32_t follows = POCL_REMOTE_PEER_DATA_STATUS_FOLLOWS,
                 status = POCL_REMOTE_PEER_DATA_STATUS;
  switch (index)
    {
    case 3:
      peer_data (fd, id, CL_COMPLETE, status, BYTES, NULL, 0);
      break;
    case 4:
      peer_data (fd, id, CL_COMPLETE, follows, 0, pattern, BYTES);
      peer_data (fd, id, CL_COMPLETE, status, BYTES, pattern, 8);
      break;
    case 5:
      peer_data (fd, id, CL_COMPLETE, follows, 0, pattern, BYTES);
      peer_data (fd, id, CL_COMPLETE, status, BYTES - 8, NULL, 0);
      break;
    case 6:
      peer_data (fd, id, CL_COMPLETE, follows, 0, pattern, BYTES / 2);
      peer_data (fd, id, CL_COMPLETE, status, BYTES, NULL, 0);
      break;
    default:
      peer_data (fd, id, CL_COMPLETE, follows | 8u, 0, pattern, BYTES);
      break;
    }
  int32_t st = completion (s, id, 10000);
  if (st != CL_DEVICE_NOT_AVAILABLE)
    fail ("%s: the migration completed with %d (%s), not "
          "CL_DEVICE_NOT_AVAILABLE",
          what, st, st == 1 ? "no COMPLETION in 10 s" : clerr (st));
  if (!closed (fd))
    fail ("%s: the peer link was not closed", what);
  close (fd);
  note ("%s: refused, the link closed, the migration failed", what);
}

int
main (void)
{
  raw_port_from_run_remote ();
  alarm (240);
  for (unsigned i = 0; i < BYTES; ++i)
    pattern[i] = (unsigned char)(i * 7 + 3);
  raw_session s;
  raw_open (&s);
  raw_create_queue (&s, QID);
  for (uint64_t mid = 0x100; mid <= 0x800; mid += 0x100)
    raw_create_buffer (&s, mid, BYTES);

  /* 1. The bytes count only with their status.  */
  int fd = attach_peer (&s, 1);
  uint64_t id = migrate_in (&s, 0x100, 1);
  peer_data (fd, id, CL_COMPLETE, POCL_REMOTE_PEER_DATA_STATUS_FOLLOWS, 0,
             pattern, BYTES);
  int32_t st = completion (&s, id, 500);
  if (st != 1)
    fail ("the migration completed (%d) before its status came", st);
  peer_data (fd, id, CL_COMPLETE, POCL_REMOTE_PEER_DATA_STATUS, BYTES, NULL,
             0);
  st = completion (&s, id, 10000);
  if (st != CL_COMPLETE)
    fail ("the migration completed with %d (%s) after its status", st,
          st == 1 ? "no COMPLETION in 10 s" : clerr (st));
  unsigned char *back = NULL;
  uint64_t got = 0;
  if (raw_read (&s, QID, 0x100, BYTES, &st, &back, &got) || st != CL_COMPLETE
      || got != BYTES || memcmp (back, pattern, BYTES) != 0)
    fail ("the migrated buffer does not hold the peer's bytes (status %d, "
          "%llu bytes)",
          st, (unsigned long long)got);
  free (back);
  note ("bytes with their status after them: completed with the status, "
        "the bytes in place");

  /* 2. A failed status fails the migration with it.  */
  id = migrate_in (&s, 0x200, 1);
  peer_data (fd, id, CL_COMPLETE, POCL_REMOTE_PEER_DATA_STATUS_FOLLOWS, 0,
             pattern, BYTES);
  peer_data (fd, id, CL_OUT_OF_RESOURCES, POCL_REMOTE_PEER_DATA_STATUS, BYTES,
             NULL, 0);
  st = completion (&s, id, 10000);
  if (st != CL_OUT_OF_RESOURCES)
    fail ("a migration whose status failed completed with %d (%s)", st,
          st == 1 ? "no COMPLETION in 10 s" : clerr (st));
  close (fd);
  note ("a failed status: the migration completed with it");

  violation (&s, 3, 0x300, "a status with no payload before it");
  violation (&s, 4, 0x400, "a status with bytes");
  violation (&s, 5, 0x500, "a status at another offset than the total");
  violation (&s, 6, 0x600, "a status before all its bytes");
  violation (&s, 7, 0x700, "an unknown PEER_DATA flag");

  /* 8. A link a peer dialed and has sent nothing on may be one whose
     HELLO_REPLY never reached it: asked to dial that peer, the server does
     not answer that the two are linked; once the peer has sent on the
     link, it does.  */
  fd = attach_peer (&s, 8);
  pocl_remote_connect_peer cp;
  memset (&cp, 0, sizeof (cp));
  cp.self_index = 0;
  cp.peer_index = 8;
  cp.port = (uint32_t)server_port + POCL_REMOTE_PEER_PORT_OFFSET;
  cp.host_len = 9;
  memcpy (cp.session_id, s.sid, sizeof (cp.session_id));
  if (raw_request (&s, POCL_RMSG_CONNECT_PEER, &cp, sizeof (cp), "127.0.0.1",
                   9, &st))
    fail ("CONNECT_PEER: the connection closed");
  if (st != CL_DEVICE_NOT_AVAILABLE)
    fail ("CONNECT_PEER to a peer whose link it never sent on: %d (%s), not "
          "CL_DEVICE_NOT_AVAILABLE",
          st, clerr (st));
  pocl_remote_notify n;
  memset (&n, 0, sizeof (n));
  n.event_id = 0x7fffffff;
  n.status = CL_COMPLETE;
  if (raw_send (fd, POCL_RMSG_PEER_NOTIFY, 0, &n, sizeof (n), NULL, 0))
    fail ("PEER_NOTIFY: the peer link closed");
  for (int tries = 0;; ++tries)
    {
      if (raw_request (&s, POCL_RMSG_CONNECT_PEER, &cp, sizeof (cp),
                       "127.0.0.1", 9, &st))
        fail ("CONNECT_PEER: the connection closed");
      if (st == CL_SUCCESS)
        break;
      if (tries == 100)
        fail ("CONNECT_PEER to a peer that sent on its link: %d (%s)", st,
              clerr (st));
      usleep (10000);
    }
  close (fd);
  note ("a link its peer never sent on is not reported as linked; once it "
        "sent, it is");

  /* 9. The queue's next command waits for the migration's bytes.  */
  static const unsigned char zeros[BYTES];
  if (raw_write (&s, QID, 0x800, zeros, BYTES, &st) || st != CL_COMPLETE)
    fail ("WRITE of the buffer to migrate into: %d", st);
  fd = attach_peer (&s, 9);
  id = migrate_in (&s, 0x800, 9);
  pocl_remote_mem_cmd mc;
  mem_cmd_init (&mc, QID, 0x800, 0, BYTES);
  const uint64_t rid = ++s.next_id;
  if (raw_send (s.cmd, POCL_RMSG_READ, rid, &mc, sizeof (mc), NULL, 0))
    fail ("READ: the connection closed");
  int migrated = 0, read_back = 0;
  for (int bytes_sent = 0; !migrated || !read_back;)
    {
      raw_msg m;
      int r = raw_recv (s.cmd, &m, bytes_sent ? 10000 : 300);
      if (r == IO_TIMEOUT && !bytes_sent)
        {
          peer_data (fd, id, CL_COMPLETE, 0, 0, pattern, BYTES);
          bytes_sent = 1;
          continue;
        }
      if (r)
        fail ("no COMPLETION of the migration (%d) or the READ behind it "
              "(%d) within 10 s of the bytes",
              migrated, read_back);
      if (m.h.type == POCL_RMSG_COMPLETION && m.h.id == id)
        {
          if (m.body.completion.status != CL_COMPLETE)
            fail ("the migration completed with %d", m.body.completion.status);
          migrated = 1;
        }
      else if (m.h.type == POCL_RMSG_COMPLETION && m.h.id == rid)
        {
          if (!bytes_sent)
            fail ("the READ behind a MIGRATE_IN completed before the "
                  "migration's bytes were sent");
          if (m.body.completion.status != CL_COMPLETE
              || m.h.payload_size != BYTES
              || memcmp (m.payload, pattern, BYTES) != 0)
            fail ("the READ behind the migration did not return the "
                  "migrated bytes (status %d, %llu bytes)",
                  m.body.completion.status,
                  (unsigned long long)m.h.payload_size);
          read_back = 1;
        }
      free (m.payload);
    }
  close (fd);
  note ("a READ right behind a MIGRATE_IN, without waits: completed after "
        "the bytes, with them");

  /* The session still serves.  */
  if (raw_write (&s, QID, 0x100, pattern, 64, &st) || st != CL_COMPLETE)
    fail ("the session no longer serves a WRITE (%d)", st);
  raw_close (&s);
  printf ("%s: PASS: a status that follows its bytes completes the "
          "migration with it; five violations close the link and fail the "
          "migration; the queue's next command waits for a migration's "
          "bytes; the session goes on\n",
          TEST_NAME);
  return 0;
}
