// channel.hh - a session's channel to its client: the command and data
// links, the command link's reader, what is sent on them (logged until
// acknowledged, replayed on a resume), the ACKs both ways, and the data
// link's bulk transport.
#pragma once

#include "outlog.hh"
#include "wire.hh"

#include <atomic>
#include <deque>
#include <mutex>
#include <string>

namespace pocld {

enum class Sock { Command, Data };

// Buffered reader of the command link.  One recv() usually brings in many
// pipelined messages; each message is handed out in place, without copying.
// The buffer grows to the largest message seen (bounded by the per-type
// payload limits) and shrinks back once a large message has been consumed.
class MsgReader {
public:
  enum class Status { Ok, Closed, Bad };
  MsgReader(Conn c, const char *sid);
  ~MsgReader();
  MsgReader(const MsgReader &) = delete;
  MsgReader &operator=(const MsgReader &) = delete;

  // Reads and frames the next message: its header must pass
  // check_command_header (decode.hh).  Bad (logged) on a violation, Closed
  // on EOF or socket error.
  Status next(Msg &m);
  // True when a whole message is already buffered, i.e. next() will not
  // block.
  bool has_message() const;
  // The queue of the next message if it is a whole NDRANGE already
  // buffered, else UINT64_MAX.  Not validated yet: a hint only.
  uint64_t next_ndrange_queue() const;
  // The event that this NDRANGE waits for, when that is its whole wait list
  // and on this server, else UINT64_MAX.  A hint too.
  uint64_t next_ndrange_sole_wait() const;

private:
  Status fill(uint64_t need);
  Conn c_;
  const uint64_t spin_ns_;
  const char *sid_;
  uint8_t *buf_;
  uint64_t cap_, start_ = 0, end_ = 0;
};

// The client's command link, handed over by the listener for a resume.
struct Resume {
  Conn link;
  uint64_t seen[2] = {0, 0};
  std::string peer;
};

class ClientChannel {
public:
  // devices: the count that HELLO_REPLYs carry.
  ClientChannel(const SessionId &id, const char *sid, uint32_t devices,
                Conn cmd);
  ~ClientChannel();
  ClientChannel(const ClientChannel &) = delete;
  ClientChannel &operator=(const ClientChannel &) = delete;

  // Logs the message for a resume and writes it if the client is there.
  // `keep`: the payload is that staging's, referenced instead of copied.
  void send(Sock s, uint32_t type, uint64_t id, const void *body,
            size_t body_len, const void *payload, uint64_t payload_len,
            Staging *keep = nullptr);
  void reply(uint64_t id, cl_int status, const void *payload = nullptr,
             uint64_t payload_len = 0);
  // A command's failure as its COMPLETION, from any thread.
  void report_failure(uint64_t id, cl_int status);
  // While a cover completes the commands it covers (Completions::complete),
  // their plain COMPLETIONs are gathered and written at once: one write
  // and one wake-up of the client's reader instead of one per command.
  // begin_batch is false if this thread already gathers; flush_batch
  // writes what was gathered, end_batch too and stops gathering.
  bool begin_batch();
  void flush_batch();
  void end_batch();
  // Shuts down the client's links: their readers end, the session waits
  // for a resume.
  void drop_connection();

  // The client's ACK: drops what it has from the logs; false on a bad count.
  bool ack(const Msg &m);
  // Acknowledges what the readers have seen: by itself (send_ack), or, once
  // due, before the next message to the client on the command link
  // (take_ack gives it), which saves a write here and a wake-up of the
  // client's reader.
  void send_ack();
  // The command reader handled a message with that many payload bytes;
  // the data reader a DATA.
  void command_seen(uint64_t payload_size);
  void data_seen();

  // The command link, for its reader.
  Conn command_link() const { return cmd_.link; }
  // The links broke: the command link is closed, the data link taken out
  // and shut down (returned, for close_data once its reader ended).
  Conn detach();
  void close_data(Conn c);
  // A resume's link: HELLO_REPLY (with this end's counts, in seen) and the
  // replay of the command log on it, then it is the command link.  False
  // (r.link closed) on bad counts or a broken link.  replayed: the messages
  // sent again.
  bool resume(Resume &r, uint64_t seen[2], size_t &replayed);

  // The data link.  has_data: one was attached (Sock::Data messages are
  // counted and logged on it from then on, also while the client is away).
  bool has_data() const { return has_data_.load(); }
  // A newer data link comes: the old one is shut down and taken out (its
  // reader ends; again: it was not the first).
  Conn take_data(bool &again);
  // After the old data link's reader ended: its bulk transport and the link
  // close.
  void end_data(Conn old, bool again);
  // The reply and the messages the client missed (after its count
  // client_seen) go out on c before it is the data link.
  bool install_data(Conn c, uint64_t client_seen);
  Conn data_link();
  bool holds_data(const Conn &c);
  pocl_remote_bulk &data_bulk() { return data_bulk_; }
  // Attaches lane `number` of the data link (sends HELLO_REPLY on it);
  // false if it is taken.
  bool attach_lane(Conn c, uint32_t number);
  void close_lanes();
  // The client's UCX_HELLO on its data link c (read by its reader), which
  // this end answers there.  False on a violation.
  bool ucx_hello(Conn c, const pocl_remote_hdr &hdr);

private:
  struct Out {
    std::mutex mu; // makes each message atomic on the link; guards log
    // Not up while the client is away; shut down lock-free, closed once
    // taken out and its reader ended.
    Conn link;
    // Sent (or waiting for a socket) and not acknowledged, oldest first;
    // `sent` counts every logged message of the session.
    std::deque<OutMsg> log;
    uint64_t sent = 0;
  };
  // Writes c's logged messages after the client's count `seen` on conn,
  // dropping those before.  False on a bad count or a failed write.
  bool replay(Out &c, Conn conn, uint64_t seen);
  bool take_ack(pocl_remote_ack &a);

  const SessionId id_;
  const char *sid_;
  const uint32_t devices_;
  Out cmd_, data_;
  std::atomic<bool> has_data_{false};
  // The data link's bulk transport: the client's lanes
  // (pocl_remote_lanes.h), attached and closed under data_.mu, which
  // striped sends hold throughout; closed with the data link once the data
  // reader, which receives on them, has ended.  Where built with UCX, UCX
  // above them (data_ucx_), which stays the lanes until the client offered
  // it and this end answered with its own offer (ucx_hello).
  pocl_remote_lanes lanes_;
  pocl_remote_bulk data_bulk_;
  pocl_remote_ucx_bulk data_ucx_;
  // Client messages handled per link (counting as in HELLO), and the
  // counts last acknowledged.  [0]: command reader; [1]: data reader.
  std::atomic<uint64_t> seen_[2] = {{0}, {0}};
  std::atomic<uint64_t> acked_cmd_{0}; // seen_[0] in the last ACK
  // The command link's payload bytes handled (command reader) and their
  // count in the last ACK, as seen_[0] and acked_cmd_.
  std::atomic<uint64_t> payload_seen_{0};
  std::atomic<uint64_t> payload_acked_{0};
  std::atomic<bool> ack_due_{false};
};

} // namespace pocld
