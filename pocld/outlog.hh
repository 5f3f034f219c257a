// outlog.hh - the log of messages sent and not yet acknowledged, kept for a
// resume: the client's channel (channel.hh) and each peer link (PeerLink).
#pragma once

#include "session_objects.hh"
#include "wire.hh"

#include <deque>
#include <vector>

namespace pocld {

// A message kept until the other end acknowledges it, for a resume: sent to
// the client (ClientChannel) or on a peer link (PeerLink::log).  The payload
// points into `keep` (a staging, one reference held) or into `owned`; the
// header has the plain type (sent again, the payload is inline).
struct OutMsg {
  uint64_t seq;
  pocl_remote_hdr hdr;
  uint8_t body[sizeof(pocl_remote_completion)];
  const uint8_t *payload;
  Staging *keep;
  std::vector<uint8_t> owned;
};
static_assert(sizeof(OutMsg::body) >= sizeof(pocl_remote_peer_data),
              "a peer message's body fits");
// Fills o (its body and payload, a reference on keep if not null, else a
// copy); drops the front entries of a log up to `seen`.
void log_message(OutMsg &o, uint64_t seq, uint32_t type, uint64_t id,
                 const void *body, size_t body_len, const void *payload,
                 uint64_t payload_len, Staging *keep);
void trim_log(std::deque<OutMsg> &log, uint64_t seen);

} // namespace pocld
