/* pocl_remote_lanes.h - lanes of the PoCL-R wire protocol: more TCP
   streams beside a session's data socket (the client's lanes) or beside a
   peer link (peer lanes) that carry large payloads in stripes.  Part of the
   one definition of the protocol: included by pocl_remote_protocol.h, not
   on its own.  doc/protocol.md, "Lanes" and "Peer lanes", explains them.  */

#ifndef POCL_REMOTE_LANES_H
#define POCL_REMOTE_LANES_H

#include <stdint.h>

/* Lanes (version 8): up to POCL_REMOTE_MAX_LANES more TCP connections of a
   session, opened by the client after its data socket (HELLO with
   ROLE_LANE and the lane's number, 1 to MAX_LANES, in peer_index).  One
   TCP stream is bound by the one core that copies its bytes; with lanes the
   payload of a large DATA or READ_DATA is carried by several streams in
   parallel.  Such a message has type | POCL_RMSG_LANES (n): header and body
   on the data socket as always, then its payload in stripes of
   POCL_REMOTE_STRIPE bytes: stripe i on stream i % (n + 1), stream 0 being
   the data socket and stream k lane k.  A lane carries nothing but such
   stripes, in the order of the messages on the data socket.  Senders stripe
   payloads of at least POCL_REMOTE_STRIPE_MIN bytes; a message sent again
   after a resume carries its payload on the data socket.  */
#define POCL_REMOTE_MAX_LANES 7u
/* Peer lanes (version 12): the same between two servers.  The server that
   opened a peer link opens up to MAX_LANES more connections to the peer
   port, each a peer HELLO whose peer_index is
   POCL_REMOTE_PEER_HELLO_INDEX (index, lane) (lane 0: the peer link
   itself); a PEER_DATA's payload is striped over the link (stream 0) and
   the lanes as a DATA's is over the data socket and the client's lanes.  */
#define POCL_REMOTE_PEER_LANE_SHIFT 16
#define POCL_REMOTE_PEER_HELLO_INDEX(index, lane)                             \
  ((uint32_t)(index) | (uint32_t)(lane) << POCL_REMOTE_PEER_LANE_SHIFT)
#define POCL_REMOTE_PEER_INDEX_OF(v)                                          \
  ((v) & ((1u << POCL_REMOTE_PEER_LANE_SHIFT) - 1))
#define POCL_REMOTE_PEER_LANE_OF(v) ((v) >> POCL_REMOTE_PEER_LANE_SHIFT)
#define POCL_REMOTE_STRIPE (1u << 20)
#define POCL_REMOTE_STRIPE_MIN (2u << 20)
#define POCL_RMSG_LANES_SHIFT 28
#define POCL_RMSG_LANES(n) ((uint32_t)(n) << POCL_RMSG_LANES_SHIFT)
#define POCL_RMSG_TYPE_OF(t) ((t) & ((1u << POCL_RMSG_LANES_SHIFT) - 1))
#define POCL_RMSG_LANE_COUNT(t) ((t) >> POCL_RMSG_LANES_SHIFT)
/* The same field, past any lane count: the payload comes over UCX
   (pocl_remote_bulk_ucx.c), not on the link.  */
#define POCL_RMSG_UCX POCL_RMSG_LANES (15u)

/* The bytes of an n-byte payload striped over `streams` streams that
   stream k carries.  */
static inline uint64_t
pocl_remote_stream_bytes (uint64_t n, unsigned k, unsigned streams)
{
  uint64_t stripes = n / POCL_REMOTE_STRIPE, rest = n % POCL_REMOTE_STRIPE;
  uint64_t whole = stripes / streams + (k < stripes % streams);
  return whole * POCL_REMOTE_STRIPE + (k == stripes % streams ? rest : 0);
}

#endif
