// peers.cc - the peer mesh: connections to the sessions that the same client
// holds on other servers.  Completions that another server waits on
// (PEER_NOTIFY) and migrated buffers (PEER_DATA) travel on them, without
// the client.
#include "control.hh"
#include "log.hh"
#include "peer_order.hh"
#include "pocl_remote_tcp.h"
#include "session.hh"

#include <cerrno>
#include <string>
#include <sys/random.h>
#include <sys/socket.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace pocld {

namespace {

constexpr int kPeerConnectTimeoutMs = 5000;

// The peer's server refuses with a HELLO_REPLY of an error, in place of the
// challenge or after AUTH, when it does not have the session (any more) or
// our key is wrong: a refusal that no retry changes.
bool read_challenge(Conn c, ChallengeMsg &ch, const char *&bad)
{
  if (!recv_deadline(c, &ch.hdr, sizeof ch.hdr, kPeerConnectTimeoutMs))
    return false;
  if (ch.hdr.type == POCL_RMSG_HELLO_REPLY &&
      ch.hdr.body_size == sizeof(pocl_remote_hello_reply)) {
    bad = kPeerSessionGone;
    return false;
  }
  return ch.hdr.type == POCL_RMSG_AUTH_CHALLENGE &&
         ch.hdr.body_size == sizeof ch.c &&
         recv_deadline(c, &ch.c, sizeof ch.c, kPeerConnectTimeoutMs);
}

} // namespace

const char *const kPeerSessionGone =
    "the peer refused: it does not have the session, or not our key";

// A peer connection (the link itself, or one of its lanes) to host:port,
// authenticated as every connection is: STARTTLS first with TLS, then
// HELLO (role PEER, the peer's session, hello_index), the challenge and
// AUTH, and the peer's HELLO_REPLY.
bool Session::peer_dial(const std::string &host, uint16_t port,
                        const uint8_t *session_id, uint32_t hello_index,
                        Conn &out, std::string &why, const uint64_t *resume,
                        uint64_t *theirs)
{
  int fd = pocl_remote_tcp_dial(host.c_str(), port, kPeerConnectTimeoutMs);
  if (fd < 0) {
    why = "cannot connect";
    return false;
  }
  HelloMsg h{};
  h.hdr.type = POCL_RMSG_HELLO;
  h.hdr.body_size = sizeof h.hello;
  h.hello.magic = POCL_REMOTE_MAGIC;
  h.hello.version = POCL_REMOTE_PROTOCOL_VERSION;
  h.hello.role = POCL_REMOTE_ROLE_PEER;
  h.hello.peer_index = hello_index;
  memcpy(h.hello.session_id, session_id, sizeof h.hello.session_id);
  h.hello.client_time_ns = realtime_ns();
  if (resume != nullptr)
    memcpy(h.hello.seen, resume, sizeof h.hello.seen);
  struct {
    pocl_remote_hdr hdr;
    pocl_remote_hello_reply r;
  } rep{};
  ChallengeMsg ch;
  AuthMsg auth;
  const char *bad = nullptr;
  // The transport's own setup first (TLS: STARTTLS in the clear names the
  // peer's session by its route, and the handshake goes inside TLS).
  Conn conn(fd);
  if (!link_transport().dial(conn, host, POCL_REMOTE_ROLE_PEER, session_id,
                             kPeerConnectTimeoutMs, why))
    bad = why.c_str();
  bool ok =
      bad == nullptr &&
      getrandom(h.hello.nonce, sizeof h.hello.nonce, 0) ==
          sizeof h.hello.nonce &&
      send_msg(conn, POCL_RMSG_HELLO, 0, &h.hello, sizeof h.hello, nullptr,
               0) &&
      read_challenge(conn, ch, bad) &&
      (bad = answer_challenge(h.hello, ch, auth)) == nullptr &&
      send_msg(conn, auth.hdr.type, 0, &auth.a, sizeof auth.a, nullptr, 0) &&
      recv_deadline(conn, &rep, sizeof rep, kPeerConnectTimeoutMs) &&
      rep.hdr.type == POCL_RMSG_HELLO_REPLY &&
      rep.hdr.body_size == sizeof rep.r && rep.hdr.payload_size == 0 &&
      rep.r.magic == POCL_REMOTE_MAGIC && rep.r.status == CL_SUCCESS;
  if (!ok && bad == nullptr && rep.hdr.type == POCL_RMSG_HELLO_REPLY &&
      rep.r.status != CL_SUCCESS)
    bad = kPeerSessionGone;
  if (!ok) {
    if (bad != nullptr)
      why = bad;
    pocl_remote_link_close(&conn);
    return false;
  }
  out = conn;
  if (theirs != nullptr)
    *theirs = rep.r.seen[0];
  return true;
}

// CONNECT_PEER: join the client's session on another server, as its peer
// number c.self_index; that server knows us by it, we know it by
// c.peer_index.  Then the link's lanes, from a thread of their own.
bool Session::connect_peer(const Decoded &d)
{
  auto c = load<pocl_remote_connect_peer>(d.body);
  std::string host(reinterpret_cast<const char *>(d.data), d.data_len);
  if (peer_connected(c.peer_index)) {
    const cl_int st =
        peer_confirmed(c.peer_index) ? CL_SUCCESS : CL_DEVICE_NOT_AVAILABLE;
    if (st != CL_SUCCESS)
      LOG_WARN(sid_,
               "peer %u: asked to dial it while its link, which it "
               "may not know of, waits",
               c.peer_index);
    reply(d.hdr.id, st);
    return true;
  }
  Conn conn;
  std::string why;
  bool dialed = peer_dial(host, uint16_t(c.port), c.session_id, c.self_index,
                          conn, why);
  if (dialed && c.peer_index < POCL_REMOTE_MAX_PEERS) {
    // What a resume dials again (peer_resume.cc), before the reader runs.
    PeerLink &l = peers_[c.peer_index];
    std::lock_guard<std::mutex> lock(l.mu);
    l.dialer = true;
    l.host = host;
    l.port = uint16_t(c.port);
    memcpy(l.session.data(), c.session_id, l.session.size());
    l.self_index = c.self_index;
  }
  if (!dialed || !start_peer(conn, c.peer_index, false)) {
    if (conn.up()) {
      pocl_remote_link_close(&conn);
      why = "link taken";
    }
    LOG_WARN(sid_, "peer %u at %s:%u refused the connection: %s",
             c.peer_index, host.c_str(), c.port, why.c_str());
    reply(d.hdr.id, CL_DEVICE_NOT_AVAILABLE);
    return true;
  }
  LOG_INFO(sid_, "peer %u connected at %s:%u", c.peer_index, host.c_str(),
           c.port);
  reply(d.hdr.id, CL_SUCCESS);
  // The dialing end offers UCX first (server_ucx.cc); the other answers.
  if (ucx_wanted())
    send_ucx_hello(c.peer_index);
  start_peer_lanes(host, uint16_t(c.port), c.session_id, c.self_index,
                   c.peer_index);
  return true;
}

// A peer connected to us (the listener checked its HELLO): a new link, one
// of its lanes, or a resume of a link that broke.
bool Session::attach_peer(Conn c, uint32_t hello_index, const uint64_t seen[2])
{
  const uint32_t index = POCL_REMOTE_PEER_INDEX_OF(hello_index);
  const uint32_t lane = POCL_REMOTE_PEER_LANE_OF(hello_index);
  if (lane != 0)
    return attach_peer_lane(c, index, lane);
  if (seen[1] == POCL_REMOTE_PEER_RESUME)
    return resume_peer(c, index, seen[0]);
  if (index >= POCL_REMOTE_MAX_PEERS)
    return false;
  return start_peer(c, index, true);
}

// With `hello`, the HELLO_REPLY goes once the link is known to be free and
// before it is registered, under the link's lock: the peer's client, told
// the link is up, may send MIGRATE_IN here at once, and it must find the
// link; nothing else goes on the link before the reply.  A reply of this
// size fits an empty socket buffer, so the locks are not held over a wait.
bool Session::start_peer(Conn c, uint32_t index, bool hello)
{
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_)
      return false;
    PeerLink &l = peers_[index];
    std::lock_guard<std::mutex> llock(l.mu);
    // A link that may still resume has its reader, waiting for that.
    if ((l.link.up() && !l.broken) || l.resumable)
      return false;
    if (hello && !send_hello_reply(c, CL_SUCCESS, id_.data(),
                                   static_cast<uint32_t>(devs_.devices.size())))
      return false;
    // The old link's reader may still be in it: closed at teardown.
    if (l.link.up())
      retired_links_.push_back(take(l.link));
    pocl_remote_link_set(&l.link, &c);
    l.broken = false;
    l.up = true;
    l.resumable = true;
    ++peers_running_;
  }
  try {
    std::thread(&Session::run_peer, this, index).detach();
  } catch (const std::system_error &) {
    std::lock_guard<std::mutex> lock(mu_);
    --peers_running_;
    std::lock_guard<std::mutex> llock(peers_[index].mu);
    peers_[index].broken = true;
    peers_[index].up = false;
    peers_[index].resumable = false;
    return false;
  }
  return true;
}

// Up, and known to the other end: we dialed it, or the peer sent on it.
// A link the peer dialed and has sent nothing on may be one whose
// HELLO_REPLY never reached it (cut on the way): it would never resume it,
// and a client told that the two are linked would push into it for good.
bool Session::peer_confirmed(uint32_t index)
{
  if (index >= POCL_REMOTE_MAX_PEERS)
    return false;
  PeerLink &l = peers_[index];
  std::lock_guard<std::mutex> lock(l.mu);
  return l.link.up() && !l.broken && (l.dialer || l.handled.load() > 0);
}

// Up, or broken and resuming (what is sent meanwhile goes once it is).
bool Session::peer_connected(uint32_t index)
{
  if (index >= POCL_REMOTE_MAX_PEERS)
    return false;
  PeerLink &l = peers_[index];
  std::lock_guard<std::mutex> lock(l.mu);
  return (l.link.up() && !l.broken) || l.resumable;
}

bool Session::peer_send(uint32_t index, uint32_t type, uint64_t id,
                        const void *body, size_t body_len, const void *payload,
                        uint64_t payload_len, bool *striped, Staging *keep,
                        const pocl_remote_bulk_src *src)
{
  if (index >= POCL_REMOTE_MAX_PEERS)
    return false;
  PeerLink &l = peers_[index];
  POCLD_TRACE_MSG(PeerSend, type, id, body, payload_len, 0);
  peer_order_sent(&peers_);
  std::unique_lock<std::mutex> lock(l.mu);
  // A payload still being read is all in place before the lock goes, sent
  // or not: a resume sends the logged message again from the same bytes.
  struct AllReady {
    const pocl_remote_bulk_src *src;
    uint64_t n;
    ~AllReady()
    {
      if (src != nullptr)
        src->ready(src->arg, n);
    }
  } all_ready{src, payload_len};
  // After what a resume sends again.
  l.cv.wait(lock, [&] { return !l.replaying; });
  // Kept for a resume until the peer handled it (peer_resume.cc).
  const bool logged = l.resumable && type != POCL_RMSG_UCX_HELLO;
  if (logged)
    peer_log(l, type, id, body, body_len, payload, payload_len, keep);
  if (!l.link.up() || l.broken) {
    if (logged)
      return true;
    LOG_WARN(sid_, "no link to peer %u: message type %u for %llu dropped",
             index, type, (unsigned long long)id);
    return false;
  }
  // A payload the caller waits a PEER_ACK for may go over the link's lanes
  // (then *striped is set).  A lane failing under the message drops the
  // lanes; the link is still in step (it carried all its stripes), and the
  // receiver, which saw the lanes fail too, asks for the bytes again.
  int r;
  if (striped != nullptr) {
    uint32_t mark = 0;
    r = send_bulk(l.link, l.bulk, type, id, body, body_len,
                  static_cast<const uint8_t *>(payload), payload_len, &mark,
                  src);
    if (mark == POCL_RMSG_UCX)
      LOG_DEBUG(sid_, "peer %u: %llu bytes for %llu over UCX", index,
                (unsigned long long)payload_len, (unsigned long long)id);
    else if (mark != 0)
      LOG_DEBUG(sid_, "peer %u: %llu bytes for %llu striped over %u peer lanes",
                index, (unsigned long long)payload_len, (unsigned long long)id,
                POCL_RMSG_LANE_COUNT(mark));
    if (mark != 0)
      *striped = true;
  } else {
    if (src != nullptr)
      src->ready(src->arg, payload_len);
    r = send_msg(l.link, type, id, body, body_len, payload, payload_len)
            ? POCL_REMOTE_BULK_OK
            : POCL_REMOTE_BULK_BROKEN;
  }
  if (r == POCL_REMOTE_BULK_PARTIAL) {
    LOG_WARN(sid_,
             "peer %u: a lane failed under %llu bytes for %llu: the link goes "
             "on without lanes",
             index, (unsigned long long)payload_len, (unsigned long long)id);
    drop_peer_lanes(l);
  }
  if (r != POCL_REMOTE_BULK_BROKEN) {
    // What the reader handled and could not tell the peer (it never waits
    // for this lock).
    peer_received_out(l);
    return true;
  }
  LOG_WARN(sid_, "send to peer %u failed (%s)%s", index, strerror(errno),
           logged ? ": sent again once the link resumes" : "");
  l.broken = true;
  pocl_remote_link_shutdown(&l.link);
  return logged;
}

// The client hears first (complete), then what waits natively: the
// bridges of commands that wait on the migration and of the queue's later
// commands (complete, order_gates), or a MIGRATE_IN with waits' user event.
void Session::finish_peer_slot(PeerSlot &s, cl_int status)
{
  // A slot that fails may have writes from its staging still running.
  if (s.last_write != nullptr && status != CL_COMPLETE)
    clWaitForEvents(1, &s.last_write);
  if (s.p != nullptr) {
    completions_.complete(s.p, status);
    s.p = nullptr;
  }
  if (s.ue != nullptr) {
    clSetUserEventStatus(s.ue, status);
    clReleaseEvent(s.ue);
    s.ue = nullptr;
  }
  if (s.staging != nullptr) {
    s.staging->unref();
    s.staging = nullptr;
  }
  if (s.last_write != nullptr)
    clReleaseEvent(s.last_write);
  s.last_write = nullptr;
  if (s.dst != nullptr)
    clReleaseMemObject(s.dst);
  if (s.size_buf != nullptr)
    clReleaseMemObject(s.size_buf);
  s.dst = s.size_buf = nullptr;
}

// The last chunk of a migration is in: the image is written now (whole),
// a buffer's chunk writes are waited for; then the content size, and the
// user event and the command complete with the outcome.
void Session::write_peer_slot(PeerSlot &s)
{
  const size_t origin[3] = {0, 0, 0};
  const uint8_t *bytes = s.staging->data();
  cl_int err = CL_SUCCESS;
  if (s.image)
    err = clEnqueueWriteImage(s.tq, s.dst, CL_TRUE, origin, s.region, 0, 0,
                              bytes, 0, nullptr, nullptr);
  else if (s.last_write != nullptr) {
    clWaitForEvents(1, &s.last_write);
    clGetEventInfo(s.last_write, CL_EVENT_COMMAND_EXECUTION_STATUS,
                   sizeof err, &err, nullptr);
  }
  if (err == CL_SUCCESS && s.size_buf != nullptr)
    err = clEnqueueWriteBuffer(s.tq, s.size_buf, CL_TRUE, 0, 8, bytes + s.size,
                               0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    LOG_WARN(sid_, "writing a migration's %llu bytes failed: %d",
             (unsigned long long)s.size, err);
  finish_peer_slot(s, err == CL_SUCCESS ? CL_COMPLETE : err);
}

// One PEER_DATA (its header and body read): the chunk goes into the
// staging and, for a buffer, straight on to the device.  1: handled; 2:
// handled and counted (peer_handled); 0: the link broke under it (a resume
// sends it again: the slot waits); -1: a violation (the link is closed).
int Session::peer_chunk(Conn c, uint32_t index, const pocl_remote_hdr &h,
                         const pocl_remote_peer_data &pd)
{
  PeerSlot *s;
  {
    // MIGRATE_IN comes from the client, usually before the bytes.  Only
    // this thread touches a slot between its first chunk and its last.
    std::unique_lock<std::mutex> lock(mu_);
    data_cv_.wait(lock,
                  [&] { return closing_ || peer_slots_.count(h.id) > 0; });
    if (closing_)
      return 0;
    s = &peer_slots_.find(h.id)->second;
  }
  auto take = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    PeerSlot out = *s;
    peer_slots_.erase(h.id);
    return out;
  };
  const uint64_t len = h.payload_size;
  const bool status_only = pd.flags & POCL_REMOTE_PEER_DATA_STATUS;
  // After a PEER_ACK asked for bytes again, chunks of later offsets still
  // in flight are dropped until the first asked for comes.  A status comes
  // after the bytes it is for (some of them asked again, maybe).
  if (s->peer != index || pd.total > s->size ||
      (pd.flags & ~POCL_REMOTE_PEER_DATA_FLAGS) != 0 ||
      (s->resend ? pd.offset < s->received : pd.offset != s->received) ||
      pd.offset > pd.total || len > pd.total - pd.offset ||
      (pd.status < 0 && len != 0) ||
      (status_only && (len != 0 || pd.offset != pd.total ||
                       !s->status_follows || s->status_in)) ||
      (s->image && (pd.offset != 0 || len != pd.total))) {
    LOG_ERR(sid_,
            "peer %u: %llu bytes at %llu of %llu for migration %llu (%llu "
            "bytes from peer %u, %llu in) refused",
            index, (unsigned long long)len, (unsigned long long)pd.offset,
            (unsigned long long)pd.total, (unsigned long long)h.id,
            (unsigned long long)s->size, s->peer,
            (unsigned long long)s->received);
    PeerSlot out = take();
    finish_peer_slot(out, CL_DEVICE_NOT_AVAILABLE);
    return -1;
  }
  // The bytes in, and their status if one follows: the slot ends.
  auto finish_in = [&] {
    PeerSlot out = take();
    if (out.striped)
      queue_peer_ack(index, h.id, CL_SUCCESS, out.received);
    if (out.staging == nullptr)
      return 1;
    if (pd.flags & POCL_REMOTE_PEER_DATA_HAS_SIZE)
      memcpy(out.staging->data() + out.size, &pd.size_value, 8);
    out.staging->size = out.received;
    // Handled now, before the write (which the slot makes whether or not
    // the link holds): the pusher may drop the bytes from its log and
    // their staging go back to its pool before the next migration wants
    // one.
    peer_handled(index, h);
    write_peer_slot(out);
    return 2;
  };
  if (status_only) {
    POCLD_TRACE(PeerRecv, h.id, POCL_RMSG_PEER_DATA, 0);
    if (pd.status < 0) {
      PeerSlot out = take();
      finish_peer_slot(out, pd.status);
      completions_.sweep_failed();
      return 1;
    }
    s->status_in = true;
    // Bytes asked for again still to come: the last of them ends it.
    return s->received < pd.total ? 1 : finish_in();
  }
  if (pd.flags & POCL_REMOTE_PEER_DATA_STATUS_FOLLOWS)
    s->status_follows = true;
  const bool stale = s->resend && pd.offset != s->received;
  if (!stale)
    s->resend = false;
  const uint64_t trace_t0 = POCLD_TRACE_T0();
  uint8_t *base =
      s->staging && !stale ? s->staging->data() + pd.offset : nullptr;
  // How the payload comes (the link's bulk transport's mark): any way but
  // inline has the pusher wait for a PEER_ACK.
  const uint32_t mark = h.type & ~POCL_RMSG_TYPE_OF(h.type);
  if (mark != 0)
    s->striped = true;
  // Of a striped buffer chunk, what is already written (see below).
  uint64_t written = 0;
  cl_int write_err = CL_SUCCESS;
  // The gap-free prefix is written as it grows, by kChunk at least, from
  // the bulk transport's threads: the device's write overlaps the network.
  auto grown = [&](uint64_t from, uint64_t to) {
    written = to;
    if (write_err != CL_SUCCESS)
      return;
    cl_event e = nullptr;
    write_err = clEnqueueWriteBuffer(s->tq, s->dst, CL_FALSE, pd.offset + from,
                                     to - from, base + from, 0, nullptr, &e);
    if (write_err != CL_SUCCESS)
      return;
    clFlush(s->tq);
    if (s->last_write != nullptr)
      clReleaseEvent(s->last_write);
    s->last_write = e;
  };
  const bool early =
      mark != 0 && base != nullptr && !s->image && pd.status >= 0;
  const pocl_remote_bulk_io io = grown_by(grown, kChunk);
  PeerLink &l = peers_[index];
  uint64_t arrived;
  int got = l.bulk.ops->recv(&l.bulk, &c, mark, base, len,
                             early ? &io : nullptr, &arrived);
  if (got == POCL_REMOTE_BULK_REFUSED)
    LOG_ERR(sid_, "peer %u: PEER_DATA over %s it has not", index,
            mark == POCL_RMSG_UCX ? "UCX, which this end did not offer,"
                                  : "lanes");
  POCLD_TRACE_SPAN(PeerRecv, h.id, POCL_RMSG_PEER_DATA, len, trace_t0);
  // A chunk that did not come whole comes again into the same staging
  // (asked for again, or sent again after a resume): the writes of what
  // came of it read from there until they end.
  if ((got == POCL_REMOTE_BULK_BROKEN || got == POCL_REMOTE_BULK_PARTIAL) &&
      written > 0 && s->last_write != nullptr)
    clWaitForEvents(1, &s->last_write);
  // Broken under it, the chunk comes again whole if the link resumes (what
  // of it was written is written again); run_peer fails the slot if not.
  if (got == POCL_REMOTE_BULK_BROKEN)
    return 0;
  if (got == POCL_REMOTE_BULK_REFUSED) {
    PeerSlot out = take();
    finish_peer_slot(out, CL_DEVICE_NOT_AVAILABLE);
    return -1;
  }
  if (pd.status >= 0 && (stale || got == POCL_REMOTE_BULK_PARTIAL)) {
    if (stale)
      return 1;
    // The link is in step (its stripes were read); the pusher keeps the
    // bytes until it hears from us.
    LOG_WARN(sid_,
             "peer %u: %s failed under migration %llu's %llu bytes at %llu "
             "(%llu in): asked again, the link goes on alone",
             index, mark == POCL_RMSG_UCX ? "UCX" : "a lane",
             (unsigned long long)h.id, (unsigned long long)len,
             (unsigned long long)pd.offset, (unsigned long long)arrived);
    drop_peer_lanes(l);
    l.up = false;
    s->resend = true;
    queue_peer_ack(index, h.id, POCL_REMOTE_PEER_ACK_RESEND, pd.offset);
    return 1;
  }
  if (pd.status < 0) {
    PeerSlot out = take();
    finish_peer_slot(out, pd.status);
    completions_.sweep_failed();
    return 1;
  }
  s->received += len;
  if (s->staging != nullptr && !s->image && (len > written || write_err)) {
    cl_event e = nullptr;
    cl_int err = write_err;
    // A small migration in one piece is written with a blocking call, as a
    // small push is read: NVIDIA's flushed write waited for took 12-14 us
    // of a 4-byte migration (two H200, traced), a blocking one takes 7.2
    // (measured natively on an H100).
    const bool at_once = pd.offset == 0 && s->received == pd.total &&
                         len <= kBlockingMax && s->last_write == nullptr;
    const uint64_t write_t0 = POCLD_TRACE_T0();
    if (err == CL_SUCCESS)
      err = clEnqueueWriteBuffer(s->tq, s->dst, at_once ? CL_TRUE : CL_FALSE,
                                 pd.offset + written, len - written,
                                 s->staging->data() + pd.offset + written, 0,
                                 nullptr, at_once ? nullptr : &e);
    POCLD_TRACE_SPAN(NativeEnqueue, h.id, POCL_RMSG_PEER_DATA, len - written,
                     write_t0);
    if (err != CL_SUCCESS) {
      // Failed now, and the slot drops the chunks still to come: a slot
      // taken away would leave them waiting for it.
      LOG_WARN(sid_, "writing a migration's chunk failed: %d", err);
      finish_peer_slot(*s, err);
    } else if (!at_once) {
      clFlush(s->tq);
      if (s->last_write != nullptr)
        clReleaseEvent(s->last_write);
      s->last_write = e;
    }
  }
  if (s->received < pd.total || (s->status_follows && !s->status_in))
    return 1;
  return finish_in();
}

// Reads one peer's messages until its link ends and does not resume
// (peer_resume.cc).  Every byte is checked like a client's: a peer is just
// another party on the network.
void Session::run_peer(uint32_t index)
{
  Conn c;
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(peers_[index].mu);
    c = peers_[index].link;
    gen = peers_[index].links;
  }
  LOG_DEBUG(sid_, "peer %u attached", index);
  // A violation ends the link for good; a link that broke may resume.
  bool violated = false;
  for (;;) {
    pocl_remote_hdr h;
    // A 4-byte migration's PEER_DATA came 22 us after it was sent to a
    // sleeping reader (two H200), a wake-up on the migration's path.
    if (!recv_exact_spin(c, &h, sizeof h)) {
      if (await_peer_resume(index, c, gen))
        continue;
      break;
    }
    DecodeError e;
    violated = true;
    if (!check_peer_header(h, e)) {
      LOG_ERR(sid_, "peer %u: %s", index, e.why);
      break;
    }
    peer_order_heard(&peers_);
    bool io_ok = true;
    if (h.type == POCL_RMSG_PEER_NOTIFY) {
      pocl_remote_notify n;
      if ((io_ok = recv_exact(c, &n, sizeof n))) {
        if (n.status > CL_COMPLETE) {
          LOG_ERR(sid_, "peer %u: non-final status %d", index, n.status);
          break;
        }
        POCLD_TRACE(PeerRecv, n.event_id, POCL_RMSG_PEER_NOTIFY, 0);
        completions_.foreign_done(n.event_id, n.status);
        peer_handled(index, h);
      }
    } else if (h.type == POCL_RMSG_UCX_HELLO) {
      io_ok = ucx_hello(c, index, h);
    } else if (h.type == POCL_RMSG_PEER_BYE) {
      LOG_DEBUG(sid_, "peer %u: its session ends", index);
      peers_[index].peer_ended.store(true, std::memory_order_release);
    } else if (h.type == POCL_RMSG_PEER_RECEIVED) {
      pocl_remote_peer_received r;
      if ((io_ok = recv_exact(c, &r, sizeof r)) &&
          !peer_received_in(index, r))
        break;
    } else if (h.type == POCL_RMSG_PEER_ACK) {
      pocl_remote_peer_ack a;
      if ((io_ok = recv_exact(c, &a, sizeof a))) {
        if (a.status != CL_SUCCESS && a.status != POCL_REMOTE_PEER_ACK_RESEND) {
          LOG_ERR(sid_, "peer %u: PEER_ACK status %d", index, a.status);
          break;
        }
        peer_ack_in(index, h.id, a);
        peer_handled(index, h);
      }
    } else {
      pocl_remote_peer_data pd;
      int r = (io_ok = recv_exact(c, &pd, sizeof pd)) ? peer_chunk(c, index, h, pd)
                                                       : 0;
      if (r < 0)
        break;
      io_ok = r > 0;
      if (r == 1)
        peer_handled(index, h);
    }
    violated = false;
    if (!io_ok && !await_peer_resume(index, c, gen))
      break;
  }
  if (violated)
    LOG_ERR(sid_, "peer %u: the link ends for good", index);
  give_up_peer(index);
  LOG_DEBUG(sid_, "peer %u detached", index);
  {
    std::lock_guard<std::mutex> lock(peers_[index].mu);
    peers_[index].broken = true;
    pocl_remote_link_shutdown(&c);
  }
  drop_peer_lanes(peers_[index]);
  // Migrations from this peer can no longer come, nor acknowledgements.
  std::vector<PeerSlot> lost;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &w : ack_waits_)
      if (w.second.peer == index)
        w.second.gone = true;
    for (auto it = peer_slots_.begin(); it != peer_slots_.end();) {
      if (it->second.peer == index) {
        lost.push_back(it->second);
        it = peer_slots_.erase(it);
      } else
        ++it;
    }
  }
  for (PeerSlot &s : lost)
    finish_peer_slot(s, CL_DEVICE_NOT_AVAILABLE);
  if (!lost.empty())
    completions_.sweep_failed();
  std::lock_guard<std::mutex> lock(mu_);
  --peers_running_;
  data_cv_.notify_all();
}

} // namespace pocld
