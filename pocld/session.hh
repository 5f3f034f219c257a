// session.hh - one client session: its sockets, objects and events.
#pragma once

#include "built_programs.hh"
#include "channel.hh"
#include "cl.hh"
#include "completions.hh"
#include "decode.hh"
#include "devices.hh"
#include "peer_link.hh"
#include "session_objects.hh"
#include "trace.hh"
#include "wire.hh"

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pocld {

// Bulk transfers move in parts of this size: a WRITE's bytes are written to
// the device part by part as the data socket brings them, and a large READ
// (POCL_REMOTE_READ_STREAM_MIN) or PUSH is sent part by part as its native
// reads finish, so that the network and the device copies overlap.
constexpr uint64_t kChunk = 4u << 20;
// Staging of at least this size is pooled, and pinned where the platform
// wants it (Staging::create).
constexpr uint64_t kStagingLarge = 1u << 20;
// The smallest block of pinned staging (reads are pinned at every size).
constexpr uint64_t kPinnedSmallMin = 4u << 10;
// A PUSH up to this size may be read with a blocking call (push_now).
constexpr uint64_t kBlockingMax = 64u << 10;

struct Whole; // migrate.cc

// Enqueues bytes [offset, offset + len) of a write's data at src (the
// native write's waits, its event), as clEnqueue* do.
using WriteEnqueue = std::function<cl_int(const uint8_t *src, uint64_t offset,
                                          uint64_t len, cl_uint num_waits,
                                          const cl_event *waits, cl_event *ev)>;

// The native write of a WRITE* whose bytes come on the data socket.  The
// command reader opens the command, covers its queue's untracked commands
// and hands this over in the write's DataSlot; the data reader enqueues the
// write as the bytes come (Session::write_part) and launches the command
// once all are in (finish_job), so that the command reader goes on
// meanwhile.  Only the thread holding the slot touches it.
struct WriteJob {
  Pending *p;
  cl_command_queue q;
  cl_context ctx;              // q's, for the user event of a cut
  std::vector<cl_event> waits; // the command's (retained): the first part's
  WriteEnqueue enqueue;
  uint64_t size;
  bool in_parts;     // buffers: written part by part, else whole once all is in
  uint32_t type;     // the WRITE*'s message type, for the trace
  uint64_t done = 0; // bytes enqueued
  cl_event first = nullptr, last = nullptr; // the parts' (retained)
  cl_int err = CL_SUCCESS; // a part could not be enqueued: no more are
  cl_event ue = nullptr;   // the rest waits behind it (Session::defer_job)
};

// Where the bytes of a WRITE* sent on the data socket go, in command order.
// staging == nullptr: the command failed, the bytes are read and dropped.
// The data reader takes them in kChunk parts, and writes them to the device
// as they come through `job`; if the connection breaks first, the rest is
// written behind `ue`, which the data reader completes once the resumed
// client has sent them again.
struct DataSlot {
  uint64_t id;
  uint64_t size;
  Staging *staging;
  WriteJob *job = nullptr; // not launched yet
  cl_event ue = nullptr;
  uint64_t in = 0; // bytes in before a break: a resume's replay skips them
};

class Session {
public:
  Session(const Devices &devs, const SessionId &id, Conn cmd);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const SessionId &id() const { return id_; }
  const char *sid() const { return sid_; }

  // The command reader: runs until the socket closes (true: the client may
  // resume) or the session must end (a protocol violation, BYE: false).
  bool run_commands();
  // After run_commands returned true: closes the client's sockets and waits
  // for the data reader to end.
  void detach();
  // Waits up to session_grace_ms for a resume and takes it: the counts
  // go back, the command log is replayed, run_commands may go on.  False:
  // the session ends.
  bool wait_resume();
  // From the control thread: the client's new command socket.  A session
  // that still thinks itself connected drops the old connection.
  void offer_resume(Resume r);
  // After run_commands: ends the data reader, waits for the native commands
  // still queued and releases every object of the session.
  void teardown();
  // Attaches the data socket (sends HELLO_REPLY and the data messages the
  // client missed on it), replacing an earlier one; false if the session is
  // closing.
  bool attach_data(Conn c);
  void run_data();
  // Attaches lane `number` of the data socket (sends HELLO_REPLY on it);
  // false if it is taken.
  bool attach_lane(Conn c, uint32_t number)
  {
    return client_.attach_lane(c, number);
  }
  // Attaches a peer's connection (sends HELLO_REPLY on it) and starts its
  // reader, or one of its lanes (POCL_REMOTE_PEER_HELLO_INDEX); false if
  // the index or lane is taken or the session is closing.
  // seen: the HELLO's (a resume of the link: peer_resume.cc).
  bool attach_peer(Conn c, uint32_t hello_index, const uint64_t seen[2]);
  // Wakes both readers and the peer readers (server stop, teardown).
  void shutdown_sockets();

private:
  friend class Completions;
  enum class Outcome { Ok, Failed, Protocol };

  // commands.cc: the command reader's call of a message's handler.
  bool dispatch(const Msg &m);
  // dispatch's call of a handler, which takes the message or its decoded
  // form; none: a type the session's command reader does not hand on.
  bool handle(bool (Session::*h)(const Msg &), const Msg &m)
  {
    return (this->*h)(m);
  }
  bool handle(bool (Session::*h)(const Decoded &), const Msg &)
  {
    return (this->*h)(in_);
  }
  bool none(const Msg &) { return false; }
  void flush_dirty();

  void reply(uint64_t id, cl_int status, const void *payload = nullptr,
             uint64_t payload_len = 0)
  {
    client_.reply(id, status, payload, payload_len);
  }
  // A command that failed before it reached the runtime (a PUSH: its peer
  // hears of it).  Command reader.
  void complete_now(uint64_t id, cl_int status);

  // objects.cc: synchronous requests.
  cl_context context(uint32_t platform, cl_int &err);
  int64_t timer_offset(const Device &d, cl_command_queue q);
  bool device_info(const Msg &m);
  bool create_queue(const Msg &m);
  bool create_buffer(const Msg &m);
  bool create_image(const Msg &m);
  bool create_sampler(const Msg &m);
  bool finish(const Msg &m);
  bool clock(const Msg &m);
  bool free_object(const Msg &m);
  Queue *find_queue(uint64_t id);
  Mem *find_buffer(uint64_t id);
  Mem *find_image(uint64_t id);
  void release_mem(Mem &mem);

  // programs.cc
  bool build_program(const Decoded &d);
  bool get_program_binary(const Msg &m);
  void keep_program(uint64_t id, cl_program prog);
  bool create_kernel(const Decoded &d);

  // completions.cc: a command's wait list, its entry in the completions'
  // table and its launch.
  Pending *open_cmd(uint64_t id, const WaitList &waits, const Queue &q,
                    uint64_t queue_id, cl_int &err);
  void launch(Pending *p, cl_int err, cl_event ev, Queue &q);
  void release_waits();
  // events.cc: the covers of commands without an event, other servers'
  // events.
  void enqueued(Queue &q);
  bool notify(const Msg &m);
  void fail_slot(DataSlot &s);
  bool subscribe(const Msg &m);
  void notify_subscribers(uint64_t id, cl_int status,
                          const std::vector<uint32_t> &subs);
  void order_gates(Queue &q)
  {
    completions_.order_gates(q, contexts_[q.platform]);
  }

  // commands.cc
  bool marker(const Decoded &d);
  bool ndrange(const Decoded &d);
  cl_int set_args(Kernel &k, const Device &dev,
                  const std::vector<ArgView> &args);
  // The local size of a 1D NDRange on a GPU that the client left to the
  // server (local all 0), or 0 to leave it to the native runtime.
  size_t local_size(Kernel &k, const Device &dev, size_t global);
  bool mem_command(const Decoded &d);

  // cmdbuf.cc
  bool cmdbuf_create(const Msg &m);
  bool cmdbuf_run(const Decoded &d);
  bool cmdbuf_free(const Msg &m);
  void cmdbuf_release_all();
  bool native_cmdbuf(const Device &d, NativeCmdBuf &n);
  cl_int cmdbuf_check(const Decoded &d, const Queue &q);
  cl_int cmdbuf_record(CmdBuf &cb, Queue &q);
  void cmdbuf_release(CmdBuf &cb);
  cl_int cmdbuf_emulate(CmdBuf &cb, Queue &q, cl_uint n, const cl_event *w,
                        cl_event *ev);

  // svm.cc
  bool svm_alloc(const Msg &m);
  bool svm_free(const Msg &m);
  bool kernel_info(const Msg &m);
  bool svm_read(const Msg &m);
  bool svm_host_transfer(const Decoded &d, Queue &q);
  bool svm_write(const Msg &m);
  cl_int svm_host_copy(const pocl_remote_svm_sync &r, void *dst,
                       const void *src);
  void svm_release_all();
  // The address if [address, address + size) lies in one allocation.
  void *svm_find(uint64_t address, uint64_t size);
  // The allocation holding [address, address + size) gets a buffer on it:
  // its key, or 0.  svm_unbuffer drops the buffer.
  uint64_t svm_buffer(uint64_t address, uint64_t size);
  void svm_unbuffer(uint64_t key);
  bool svm_arg_ok(uint32_t i, uint64_t address);
  // The functions of the native USM allocation holding address, or nullptr
  // (an SVM allocation, or none).
  const UsmFns *svm_usm(uint64_t address);
  cl_int svm_exec_info(Kernel &k);
  bool svm_mem_command(const Decoded &d, Queue &q);
  cl_int svm_stage(const Decoded &d, Staging *&st);
  cl_int svm_around(cl_command_queue cq, const Decoded &d, Staging *st,
                    cl_uint n, const cl_event *w, cl_event *ev,
                    const std::function<cl_int(cl_uint, const cl_event *,
                                               cl_event *)> &kernel);
  cl_int sub_buffer(const Mem &mem, uint64_t offset, const Device &d,
                    cl_mem &out);
  template <class F>
  Outcome run(uint64_t id, const pocl_remote_cmd &c, const WaitList &waits,
              Queue &q, Staging *st, Pending::Kind kind, cl_event extra_wait,
              F enqueue, bool may_elide = false);
  // Enqueues a Cover marker for q's untracked commands.
  void cover(Queue &q);
  void cover_trailing();
  void adopt(Pending *p, Queue &q);
  template <class F>
  bool run_write(uint64_t id, const pocl_remote_cmd &c, const WaitList &waits,
                 Queue &q, const uint8_t *inline_data, uint64_t size,
                 bool in_parts, F enqueue);
  bool fail_write(uint64_t id, const pocl_remote_cmd &c, uint64_t size,
                  cl_int err);

  // write.cc: a data-socket WRITE*'s native write, enqueued and launched
  // by the data reader (WriteJob).  Command reader: hands the opened
  // command over, and waits for its launch only where a message needs it.
  void hand_over(Pending *p, Queue &q, uint64_t size, bool in_parts,
                 WriteEnqueue enqueue);
  bool overtakes_write(const Decoded &d) const;
  void wait_write();
  // The thread holding the job's slot.
  void write_part(WriteJob &j, uint64_t to);
  void finish_job(WriteJob *j);
  // The slot's bytes stopped coming: its rest will wait behind a user event
  // the slot keeps (under mu_ for a queued slot).  Returns the job, for
  // finish_job.
  WriteJob *defer_job(DataSlot &s);
  // defer_job and finish_job for every queued slot with a job; lock holds
  // mu_ (released meanwhile).
  void defer_queued(std::unique_lock<std::mutex> &lock);
  bool read_stream(const Decoded &d, Queue &q, Mem &src, Mem *size);
  void send_read(Pending *p, std::vector<cl_event> parts, cl_event size_read,
                 uint64_t offset);

  // migrate.cc
  Mem *find_mem(uint64_t id);
  bool push(const Decoded &d);
  bool migrate_in(const Decoded &d);
  bool copy_content(const Decoded &d, Queue &q, Mem &src, Mem &dst,
                    Mem &size);

  // staged_copy.cc
  bool staged_copy(const Decoded &d, Queue &q, Mem &src, Mem &dst);

  // peers.cc: the peer mesh.
  bool connect_peer(const Decoded &d);
  bool start_peer(Conn c, uint32_t index, bool hello);
  bool peer_connected(uint32_t index);
  bool peer_confirmed(uint32_t index);
  void run_peer(uint32_t index);
  // Completes the slot's user event with `status` and releases the slot.
  void finish_peer_slot(PeerSlot &s, cl_int status);
  void write_peer_slot(PeerSlot &s);
  int peer_chunk(Conn c, uint32_t index, const pocl_remote_hdr &h,
                  const pocl_remote_peer_data &pd);
  void stream_push(Pending *p, std::vector<cl_event> chunks,
                   std::vector<uint64_t> ends, cl_event size_read);
  cl_int push_whole(Pending *p, const std::vector<cl_event> &chunks,
                    const std::vector<uint64_t> &ends,
                    pocl_remote_peer_data &pd, bool &striped);
  // The session's private in-order queue on q's device, made on first use
  // (command reader only).
  cl_command_queue transfer_queue(const Queue &q, cl_int &err);
  // Where a write of `size` bytes on q is staged: pinned memory of q's
  // context, mapped on the transfer queue, or nullptr (the heap; always
  // below kStagingLarge: NVIDIA takes small writes from pageable memory as
  // fast).  Command reader.
  const Pinning *pinning(const Queue &q, uint64_t size);
  // The pinned memory of q's platform, if it wants pinned staging.
  const Pinning *platform_pinning(const Queue &q);
  // Where a read on q with these waits is staged, at any size: pinned,
  // unless it would wait behind a user event.
  const Pinning *read_pinning(const WaitList &waits, uint64_t queue_id,
                              const Queue &q);
  // Links taken from peer links that were made anew, whose readers may
  // still be in them: closed at teardown (mu_).
  std::vector<Conn> retired_links_;
  // peer_lanes.cc: the lanes of peer links.
  // resume: this end's count of the peer's messages (the HELLO's seen),
  // and *theirs the peer's of ours (its HELLO_REPLY's).
  bool peer_dial(const std::string &host, uint16_t port,
                 const uint8_t *session_id, uint32_t hello_index, Conn &out,
                 std::string &why, const uint64_t *resume = nullptr,
                 uint64_t *theirs = nullptr);
  // peer_resume.cc: the log of a peer link, its PEER_RECEIVED, and its
  // resume after a break.
  void peer_log(PeerLink &l, uint32_t type, uint64_t id, const void *body,
                size_t body_len, const void *payload, uint64_t payload_len,
                Staging *keep);
  void peer_trim(PeerLink &l, uint64_t handled);
  void peer_handled(uint32_t index, const pocl_remote_hdr &h);
  void peer_received_out(PeerLink &l);
  bool peer_received_in(uint32_t index, const pocl_remote_peer_received &r);
  bool await_peer_resume(uint32_t index, Conn &c, uint64_t &gen);
  bool redial_peer(uint32_t index, Conn &c, uint64_t &gen);
  bool resume_peer(Conn c, uint32_t index, uint64_t theirs);
  uint64_t install_peer_link(uint32_t index, Conn c, uint64_t theirs);
  void replay_peer(uint32_t index, uint64_t gen, uint64_t theirs);
  void give_up_peer(uint32_t index);
  void say_bye_to_peers();
  struct LaneDial;
  void start_peer_lanes(const std::string &host, uint16_t port,
                        const uint8_t *session_id, uint32_t self_index,
                        uint32_t peer_index);
  void open_peer_lanes(LaneDial *d);
  bool attach_peer_lane(Conn c, uint32_t index, uint32_t lane);
  void drop_peer_lanes(PeerLink &l);
  // server_ucx.cc: UCX_HELLO, this end's (once) and the peer's.
  void send_ucx_hello(uint32_t index);
  bool ucx_hello(Conn c, uint32_t index, const pocl_remote_hdr &hdr);
  // Whether peer `index`'s large payloads go over lanes or UCX now, which
  // the receiver writes as they come.
  bool peer_writes_as_it_comes(uint32_t index);
  // striped non-null: the payload may go striped over the link's lanes
  // (then *striped is set), for a caller that waits for the PEER_ACK.
  // keep: the staging the payload lies in (referenced by the link's log
  // until the peer handled the message; null: the payload is copied).
  // True once the message is sent or logged for a resume.
  bool peer_send(uint32_t index, uint32_t type, uint64_t id, const void *body,
                 size_t body_len, const void *payload, uint64_t payload_len,
                 bool *striped = nullptr, Staging *keep = nullptr,
                 const pocl_remote_bulk_src *src = nullptr);
  // PEER_ACKs go out from a thread of their own, never from a peer reader:
  // two readers each sending to the other's full socket would deadlock.
  void queue_peer_ack(uint32_t peer, uint64_t id, int32_t status,
                      uint64_t offset);
  void send_peer_acks();
  void peer_ack_in(uint32_t peer, uint64_t id, const pocl_remote_peer_ack &a);
  cl_int settle_push(uint32_t peer, uint64_t id, pocl_remote_peer_data pd,
                     Staging *st);
  bool wait_peer_ack(uint32_t peer, uint64_t id, pocl_remote_peer_ack &a);
  struct PushState;
  void send_push(const PushState &p, Staging *st, cl_int status);
  bool push_now(const Decoded &d, Queue &q, Mem &src, Mem *size, const Whole &w,
                Staging *st);

  const Devices &devs_;
  const SessionId id_;
  char sid_[9];
  ClientChannel client_;
  Completions completions_;
  // Data socket hand-over: guarded by mu_.
  std::mutex mu_;
  std::condition_variable data_cv_;
  std::deque<DataSlot> data_slots_;
  bool closing_ = false;
  bool data_running_ = false;
  bool data_stop_ = false; // the data reader must end (detach)
  bool fatal_ = false;     // a protocol violation: no resume
  Resume pending_;         // a resume not taken yet
  std::condition_variable resume_cv_;
  uint64_t client_seen_data_ = 0; // the resume's count for the data log
  // A WriteJob was handed over and is not launched yet (launched_cv_ tells
  // the command reader, which may wait for it: wait_write).
  bool write_launching_ = false;
  std::condition_variable launched_cv_;
  // kChunk parts of DATA received: the command reader's patience (no lock).
  std::atomic<uint64_t> data_parts_{0};
  // MIGRATE_IN commands waiting for their bytes, by event id; also mu_.
  std::unordered_map<uint64_t, PeerSlot> peer_slots_;
  unsigned peers_running_ = 0; // peer readers not yet ended; also mu_
  // Striped pushes waiting for their PEER_ACK, by migration id, and the
  // PEER_ACKs to send (send_peer_acks runs while there are some); also mu_.
  std::unordered_map<uint64_t, PeerAckWait> ack_waits_;
  struct AckOut {
    uint32_t peer;
    uint64_t id;
    pocl_remote_peer_ack ack;
  };
  std::deque<AckOut> acks_out_;
  bool ack_sender_ = false;

  // Peer links by the client's server index.
  std::array<PeerLink, POCL_REMOTE_MAX_PEERS> peers_;

  // Everything below belongs to the command reader thread alone.
  std::vector<cl_context> contexts_; // per platform, created on first use
  std::vector<cl_command_queue> transfer_; // per device, see transfer_queue
  std::vector<Pinning> pins_;              // per platform, see pinning
  std::unordered_map<uint64_t, Queue> queues_;
  std::unordered_map<uint64_t, Mem> mems_;
  std::unordered_map<uint64_t, Program> programs_;
  BuiltPrograms built_; // programs built from source, for builds again
  std::unordered_map<uint64_t, Kernel> kernels_;
  std::unordered_map<uint64_t, Sampler> samplers_;
  std::unordered_map<uint64_t, CmdBuf> cmdbufs_;
  std::map<uint64_t, SvmAlloc> svm_; // by address, for range lookups
  uint64_t svm_gen_ = 0;             // changes of svm_
  uint64_t next_serial_ = 1;
  std::vector<cl_event> waits_; // the wait list being built
  // Sub-buffers made for the NDRANGE being enqueued, released right after
  // it (see Session::sub_buffer).
  std::vector<cl_mem> launch_subs_;
  // The PUSH being handled: run() gives its Pending these, and
  // complete_now() reports its failure to the peer, not to the client.
  struct PushState {
    bool active;
    uint64_t id;
    uint32_t peer;
    uint64_t size;
    bool has_size;
  } push_{};
  Decoded in_;                  // the message being handled
  // The WriteJob handed over last, until the command reader has seen it
  // launched: messages that need it enqueued first wait (overtakes_write).
  bool write_busy_ = false;
  uint64_t write_id_ = 0, write_queue_ = 0;
  std::vector<Queue *> dirty_;  // queues to flush before blocking on input
  // The queue of the next message if it is an NDRANGE already received
  // (MsgReader::next_ndrange_queue), and the queue whose untracked commands
  // wait for it: a command goes without an event only when the next one,
  // on the same queue, is already here to cover it.
  uint64_t next_ndrange_queue_ = UINT64_MAX;
  // ... and the event it waits for alone (MsgReader::next_ndrange_sole_wait).
  uint64_t next_sole_wait_ = UINT64_MAX;
  Queue *trailing_ = nullptr;
  uint64_t trailing_id_ = 0;
};

} // namespace pocld
