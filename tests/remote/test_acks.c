/* test_acks.c - when pocld acknowledges a client's messages (doc/protocol.md,
   "Resume after a broken connection"), over raw sockets (raw_client.c),
   against the shared fixture's pocld (run_remote.sh).  In order:

   1. 300 markers on one queue, pipelined: their 300 COMPLETIONs come with
      exactly one ACK (by itself every 64 messages there were four), whose
      command count is at least 256 (owed from the 256th message on, not
      before), and a COMPLETION follows it in the stream.
   2. A client that only sends: 1100 markers waiting on a foreign event that
      nobody reported get no COMPLETION, and pocld sends an ACK by itself
      once 1024 messages are unacknowledged (its count is at least the last
      ACK's + 1024); nothing else comes.  Once the event is reported, all
      1100 complete.
   3. An ACK of ours in the same write as a command: pocld takes both (the
      marker after it completes).

   PASS only when all hold.  */

#define TEST_NAME "acks"
#include "remote_test_util.c"

#include "raw_client.c"

static void
send_marker (raw_session *s, uint64_t id, const pocl_remote_wait *w)
{
  pocl_remote_cmd c = { 1, w != NULL, 0 };
  if (raw_send (s->cmd, POCL_RMSG_MARKER, id, &c, sizeof (c), w,
                w != NULL ? sizeof (*w) : 0))
    fail ("sending marker %llu: connection closed", (unsigned long long)id);
}

static raw_msg
recv_msg (raw_session *s, const char *what, int timeout_ms)
{
  raw_msg m;
  int r = raw_recv (s->cmd, &m, timeout_ms);
  if (r)
    fail ("%s: %s", what, r == IO_TIMEOUT ? "timeout" : "connection closed");
  free (m.payload);
  return m;
}

static uint64_t
ack_seen (const raw_msg *m)
{
  pocl_remote_ack a;
  memcpy (&a, m->body.raw, sizeof (a));
  return a.seen[0];
}

/* 1.  Returns the ACK's command count.  */
static uint64_t
ack_with_completions (raw_session *s)
{
  for (uint64_t id = 1; id <= 300; ++id)
    send_marker (s, id, NULL);
  int completions = 0, acks = 0, after_ack = 0;
  uint64_t seen = 0;
  while (completions < 300)
    {
      raw_msg m = recv_msg (s, "300 markers", 20000);
      if (m.h.type == POCL_RMSG_ACK)
        {
          ++acks;
          seen = ack_seen (&m);
          after_ack = 1;
          continue;
        }
      if (m.h.type != POCL_RMSG_COMPLETION)
        fail ("message type %u among the markers' completions", m.h.type);
      if (m.body.completion.status != CL_COMPLETE)
        fail ("marker %llu completed with %d", (unsigned long long)m.h.id,
              m.body.completion.status);
      ++completions;
      after_ack = 0;
    }
  if (acks != 1)
    fail ("%d ACKs for 301 messages, expected 1", acks);
  if (seen < 256)
    fail ("the ACK counts %llu messages: sent before 256",
          (unsigned long long)seen);
  if (after_ack)
    fail ("the ACK came last, by itself");
  note ("one ACK (%llu messages) among 300 completions, before one",
        (unsigned long long)seen);
  return seen;
}

/* 2.  */
static void
ack_alone (raw_session *s, uint64_t last_seen)
{
  pocl_remote_wait w = { 0x7777, POCL_REMOTE_WAIT_FOREIGN, 0 };
  for (uint64_t id = 1001; id <= 2100; ++id)
    send_marker (s, id, &w);
  raw_msg m = recv_msg (s, "an ACK of 1100 gated markers", 20000);
  if (m.h.type != POCL_RMSG_ACK)
    fail ("message type %u (id %llu) while 1100 markers wait", m.h.type,
          (unsigned long long)m.h.id);
  uint64_t seen = ack_seen (&m);
  if (seen < last_seen + 1024)
    fail ("the ACK alone counts %llu messages, the one before %llu: sent "
          "before 1024 were owed",
          (unsigned long long)seen, (unsigned long long)last_seen);
  raw_msg extra;
  int r = raw_recv (s->cmd, &extra, 500);
  if (r != IO_TIMEOUT)
    fail ("a message of type %u after the ACK, while the markers wait",
          r == IO_OK ? extra.h.type : 0u);
  pocl_remote_notify n = { 0x7777, CL_COMPLETE, 0 };
  if (raw_send (s->cmd, POCL_RMSG_NOTIFY_EVENT, 0, &n, sizeof (n), NULL, 0))
    fail ("NOTIFY_EVENT: connection closed");
  for (int done = 0; done < 1100;)
    {
      m = recv_msg (s, "the 1100 markers once reported", 20000);
      if (m.h.type == POCL_RMSG_ACK)
        continue;
      if (m.h.type != POCL_RMSG_COMPLETION || m.h.id < 1001 || m.h.id > 2100
          || m.body.completion.status != CL_COMPLETE)
        fail ("after the report: type %u id %llu status %d", m.h.type,
              (unsigned long long)m.h.id, m.body.completion.status);
      ++done;
    }
  note ("an ACK by itself at %llu messages (the one before at %llu), all "
        "1100 complete once reported",
        (unsigned long long)seen, (unsigned long long)last_seen);
}

/* 3.  pocld counted CREATE_QUEUE, 300 + 1100 markers and the NOTIFY.  */
static void
ack_in_one_write (raw_session *s)
{
  struct
  {
    pocl_remote_hdr ah;
    pocl_remote_ack a;
    pocl_remote_hdr mh;
    pocl_remote_cmd c;
  } __attribute__ ((packed)) w;
  w.ah = (pocl_remote_hdr){ POCL_RMSG_ACK, sizeof (w.a), 0, 0 };
  w.a = (pocl_remote_ack){ { 301, 0 } };
  w.mh = (pocl_remote_hdr){ POCL_RMSG_MARKER, sizeof (w.c), 0, 3000 };
  w.c = (pocl_remote_cmd){ 1, 0, 0 };
  if (send_all (s->cmd, &w, sizeof (w)))
    fail ("ACK and marker: connection closed");
  for (;;)
    {
      raw_msg m = recv_msg (s, "the marker after our ACK", 20000);
      if (m.h.type == POCL_RMSG_COMPLETION && m.h.id == 3000)
        {
          if (m.body.completion.status != CL_COMPLETE)
            fail ("the marker after our ACK completed with %d",
                  m.body.completion.status);
          break;
        }
      if (m.h.type != POCL_RMSG_ACK)
        fail ("message type %u id %llu before the marker's completion",
              m.h.type, (unsigned long long)m.h.id);
    }
  note ("an ACK and a marker in one write: the marker completes");
}

int
main (void)
{
  raw_port_from_run_remote ();
  raw_session s;
  raw_open (&s);
  raw_create_queue (&s, 1);
  uint64_t seen = ack_with_completions (&s);
  ack_alone (&s, seen);
  ack_in_one_write (&s);
  raw_close (&s);
  printf ("%s: PASS: ACKs go with messages when owed, by themselves only "
          "after 1024\n",
          TEST_NAME);
  return 0;
}
