// peer_link.hh - the peer mesh's state: a link to a peer server's session
// of the same client (peers.cc, peer_lanes.cc, peer_resume.cc,
// protocol/transports/ucx/server_ucx.cc), and what a migration between the
// two waits on.
#pragma once

#include "completions.hh"
#include "outlog.hh"
#include "wire.hh"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

namespace pocld {

// Where the bytes of a MIGRATE_IN go once its peer pushes them.  The
// staging holds the buffer's bytes and, after them, the content size.
struct PeerSlot {
  uint64_t size;
  uint32_t peer;
  Staging *staging;
  cl_event ue; // completed once the bytes are written
  Pending *p;  // the MIGRATE_IN, completed then too
  // Where run_peer writes them, with a blocking write on the session's
  // private queue `tq` (see migrate_in): the buffer or image (retained),
  // its whole region, and the content-size buffer (retained) or null.
  cl_command_queue tq;
  cl_mem dst, size_buf;
  bool image;
  size_t region[3];
  // Chunks so far (PEER_DATA come in offset order) and the last chunk's
  // write, for buffers written as the chunks come.
  uint64_t received;
  cl_event last_write;
  // A PEER_DATA came striped: the pusher waits for a PEER_ACK.
  bool striped = false;
  // A striped PEER_DATA lost bytes on a lane and PEER_ACK asked for them
  // again: later chunks still in flight are dropped until they come.
  bool resend = false;
  // The bytes count only with the status that follows them
  // (POCL_REMOTE_PEER_DATA_STATUS_FOLLOWS), which came (a success: a
  // failure ends the slot at once).
  bool status_follows = false;
  bool status_in = false;
};

// A pusher waiting for its migration's PEER_ACK (Session::wait_peer_ack).
struct PeerAckWait {
  uint32_t peer;
  bool got = false;  // ack holds the last one
  bool gone = false; // the link ended
  pocl_remote_peer_ack ack{};
};

// peer_dial's reason when the peer's server refused the session (gone, or
// a wrong key): dialing again is pointless.
extern const char *const kPeerSessionGone;

struct PeerLink {
  std::mutex mu; // makes each message atomic on the link and its lanes
  Conn link;     // set when the link starts or resumes (under mu)
  bool broken = false;
  // Resume (peer_resume.cc, doc/reconnect.md "Peer links"), all under mu
  // but the atomics (written under it): every message but UCX_HELLO and
  // PEER_RECEIVED is logged (`sent_count` of them so far) until the peer
  // handled it (`acked`); the reader counts the peer's (`handled`) and
  // tells it (`told`: the count last sent).  A broken link is dialed again
  // by the end that dialed it (`dialer`, with what it dialed) and waited
  // for by the other, whose reader is `parked` meanwhile, for up to
  // kPeerResumeMs (`resumable` until then); `links` counts the links
  // attached, `replaying` holds senders back while the log goes out again
  // on a new one (cv).
  std::deque<OutMsg> log;
  std::atomic<uint64_t> sent_count{0};
  std::atomic<uint64_t> acked{0};
  std::atomic<uint64_t> handled{0};
  uint64_t told = 0;
  std::atomic<bool> received_due{false}; // a large PEER_DATA to acknowledge
  std::atomic<bool> peer_ended{false};   // PEER_BYE came: no resume
  bool resumable = false;
  bool replaying = false;
  bool parked = false;
  uint64_t parked_on = 0; // the number of the link the reader parked after
  uint64_t links = 0;
  std::condition_variable cv;
  bool dialer = false;
  std::string host;
  uint16_t port = 0;
  SessionId session{};
  uint32_t self_index = 0;
  // Peer lanes (peer_lanes.cc), the link's bulk transport: used by the
  // link's senders under mu and by its reader; once one fails, the link
  // goes on without lanes (shut down for good).
  pocl_remote_lanes lanes;
  pocl_remote_bulk bulk;
  // UCX (where built in): the bulk transport above the lanes once both
  // ends offered it in UCX_HELLO;
  // `ucx_answered`: this end sent its UCX_HELLO.
  pocl_remote_ucx_bulk ucx;
  bool ucx_answered = false;
  // The link is up (its reader runs): lanes may attach.
  std::atomic<bool> up{false};
  PeerLink();
};

} // namespace pocld
