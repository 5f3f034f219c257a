// completions.hh - the completion of a session's commands: the event table,
// each command's completion action, the completers (waiter and failer), the
// foreign events others report, and the gates of queues behind migrations.
#pragma once

#include "cl.hh"
#include "decode.hh"
#include "devices.hh"
#include "session_objects.hh"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pocld {

// Commands one session may have sent and not yet seen completed; more fail
// with CL_OUT_OF_RESOURCES (no backpressure: the commands may wait on a
// NOTIFY_EVENT behind them on the socket).  --max-pending; set by main
// before any session process is forked.
extern uint32_t max_pending_commands;
// Foreign events reported complete (NOTIFY_EVENT, PEER_NOTIFY) whose status
// is kept for commands still to come that wait on them; older ones are
// forgotten.  A report comes after the command it is for, or races with it
// by a round trip at most, so this many is plenty for any real client.
constexpr size_t kForeignKnownKept = 65536;
// Foreign events that commands wait on and that nobody reported yet: past
// this the session is closed as hostile.
constexpr size_t kMaxForeignPending = 65536;

// Marks protocol violations in open_cmd's err (not an OpenCL error code).
constexpr cl_int kProtocolError = 1;

class ClientChannel;
class Completions;
class Session;
struct Pending;

// What a command's completion does once the commands it covers are
// reported: set with its kind when the command is opened, called by
// Completions::complete.  c.status holds the command's outcome; batch: this
// completion gathers the plain COMPLETIONs (ClientChannel::begin_batch).
using CompleteFn = void (*)(Completions &, Pending *p,
                            pocl_remote_completion &c, bool batch);

// A command (or FINISH marker) whose COMPLETION (or REPLY) is not sent yet.
// Commands live in the event table, keyed by event id, until then.
struct Pending {
  Completions *owner;
  uint64_t id; // event id; request id for FINISH
  cl_event ev;
  Staging *staging; // freed after completion
  int64_t ts_offset;
  uint32_t platform;
  uint32_t flags; // POCL_RCMD_*
  enum Kind : uint8_t {
    Plain,
    Read,       // the completion carries the staging bytes
    Kernel,     // an NDRANGE: may have printed
    Finish,     // a FINISH: answered with a REPLY; not in the table
    Push,       // a PUSH: its bytes go to peer `peer` as PEER_DATA, and the
                // receiving server completes the event
    MigrateIn,  // a MIGRATE_IN: reports the bytes its peer pushed
    PushStream, // a large PUSH, sent in chunks by a pusher thread
    ReadStream, // a large READ, sent as READ_DATA parts by a sender thread
    Cover, // a marker for `covered` alone: not the client's; not in the table
    Kinds
  } kind;
  CompleteFn done;
  inline void set_kind(Kind k);
  // Completed by their own thread (run_peer, the pusher, the sender), never
  // through the runtime's callback or the waiter.
  bool self_completing() const
  {
    return kind == MigrateIn || kind == PushStream || kind == ReadStream;
  }
  // A command done in parts: the first part's native event (ev is the
  // last's), for the profiling start.  Released at completion.
  cl_event first = nullptr;
  // An error that the completion reports although ev succeeded: a part
  // after the first could not be enqueued, or its bytes never came.
  cl_int error = CL_SUCCESS;
  // User events that mirror the completion, made when a command on another
  // platform waited on it, or anything on a MIGRATE_IN (which has no ev;
  // open_cmd, order_gates).  Set by complete().
  std::vector<cl_event> bridges;
  // May wait, directly or through its queue's order, on an event the client
  // completes later (a user event, another device, data still to come):
  // such a command is never given to the waiter thread, which must not
  // block behind it.
  bool gated = true;
  uint64_t queue_id = 0;
  uint32_t peer = 0;      // Push: the receiver
  uint64_t push_size = 0; // Push: buffer bytes; the size value follows
  bool push_has_size = false;
  // Peers that asked (SUBSCRIBE) to hear of the completion.
  std::vector<uint32_t> subscribers;
  // Earlier commands of the same queue that are complete when this one is,
  // reported first: of an in-order queue, commands without a native event
  // (ev == nullptr), whose `cover` is this one's event (not retained, see
  // Session::adopt), for commands of other queues that wait on them; of an
  // out-of-order queue, a chain of commands each waited for by the next
  // (`chained`).
  std::vector<Pending *> covered;
  cl_event cover = nullptr;
  // Its native event has no callback: the command after it, which waits for
  // it, covers it (Session::run).  The sweep leaves it to that one.
  bool chained = false;
};

// An event of another device or a user event, as NOTIFY_EVENT (client) or
// PEER_NOTIFY (the peer running it) reports it.
struct Foreign {
  bool known = false;
  cl_int status = 0;
  // Until known: the user event standing for it, per platform context.
  std::vector<std::pair<uint32_t, cl_event>> ues;
};

class Completions {
public:
  // s: the session the commands are of, client: its channel, where the
  // completions go.
  Completions(Session &s, ClientChannel &client, const Devices &devs,
              const char *sid);
  ~Completions();
  Completions(const Completions &) = delete;
  Completions &operator=(const Completions &) = delete;

  // From the native runtime's event callback (any thread).
  void complete(Pending *p, cl_int exec_status);
  // complete(), later and on a thread of its own (failed_mu_).
  void fail_later(Pending *p, cl_int status);

  // The command reader's side (Session::open_cmd): a new entry for event `id`
  // of the queue, gated as its waits are; its same-server waits are added to
  // `waits`, bridged through user events of ctx where they need.
  Pending *open(uint64_t id, const WaitList &waits, const Queue &q,
                uint64_t queue_id, cl_context ctx, bool gated,
                std::vector<cl_event> &out, cl_int &err);
  // The entry of an opened command not completed yet (its own thread
  // completes it); with gates: drops those of retired migrations first.
  Pending *find(uint64_t id, std::vector<uint64_t> *gates = nullptr);
  // A command opened that reached no runtime: out of the table.
  void drop(uint64_t id);
  // A command that reached no runtime, its failure already reported: out of
  // the table, its subscribers in subs.
  void retire_unlaunched(Pending *p, cl_int err, std::vector<uint32_t> &subs);
  // Would a command with these waits on this queue wait behind a user event
  // (Pending::gated), its completion then observed by a callback?
  bool gated_now(const WaitList &waits, uint64_t queue_id);
  void gate(Pending *p);
  // Before any other command of q: the marker of its MIGRATE_INs still
  // waiting for their bytes (gates.cc).  ctx: q's context.
  void order_gates(Queue &q, cl_context ctx);
  // The lock under which launch() publishes a command's event where sweeps
  // look (platforms with silent failures only).
  std::unique_lock<std::mutex> sweep_guard(uint32_t platform);
  void set_event(Pending *p, cl_event ev);
  void track_finish(Pending *p);
  // The end of launch (p->ev set): the waiter or a callback reports p.  Any
  // thread; sweep_held: the caller holds sweep_guard.
  void watch(Pending *p, bool sweep_held);
  // The same for a cover marker (Session::cover).
  void watch_cover(Pending *p);
  // A native command was enqueued: its completion is waited for at the end.
  void started() { inflight_.fetch_add(1); }
  bool idle() const { return inflight_.load() == 0; }
  // Native events of failed commands, kept until the session ends.
  void keep_failed(const std::vector<cl_event> &evs);
  void sweep_failed();

  // Foreign events (gates.cc): a wait on `id` in platform's context ctx,
  // added to out; its report (from the client or a peer).
  cl_int foreign_wait(uint64_t id, uint32_t platform, cl_context ctx,
                      std::vector<cl_event> &out);
  void foreign_done(uint64_t id, cl_int status);
  // SUBSCRIBE: true if peer is told at the event's completion; else status
  // is the event's (retired) to tell now.
  bool subscribe(uint64_t event_id, uint32_t peer, cl_int &status);

  // Teardown: fails the foreign events' user events, waits for every
  // callback, stops the completers and releases the kept events.
  void fail_foreign();
  void drain();
  // Stops the completers (the session's end).
  void stop();

  // Each kind's completion action (Pending::set_kind).
  static const CompleteFn kDone[Pending::Kinds];

private:
  static void complete_plain(Completions &, Pending *p,
                             pocl_remote_completion &c, bool batch);
  static void complete_cover(Completions &, Pending *p,
                             pocl_remote_completion &c, bool batch);
  static void complete_finish(Completions &, Pending *p,
                              pocl_remote_completion &c, bool batch);
  static void complete_push(Completions &, Pending *p,
                            pocl_remote_completion &c, bool batch);
  static void complete_read(Completions &, Pending *p,
                            pocl_remote_completion &c, bool batch);
  static void complete_kernel(Completions &, Pending *p,
                              pocl_remote_completion &c, bool batch);
  static void complete_migrate_in(Completions &, Pending *p,
                                  pocl_remote_completion &c, bool batch);
  static void complete_read_stream(Completions &, Pending *p,
                                   pocl_remote_completion &c, bool batch);
  // The client's COMPLETION (and the kernels' OUTPUT), then p retires.
  void report(Pending *p, pocl_remote_completion &c, bool batch,
              const void *data, uint64_t len, bool on_data, bool kernel);
  // The common end: p's staging and events go, the batch ends, the
  // session may go after retire_one.
  void finish_up(Staging *st, cl_event ev, cl_event first, bool keep,
                 bool batch);
  void retire_one();
  cl_event bridge(Pending &o, cl_context ctx, cl_int &err);
  void ungate(Pending *p);
  void wait_for(Pending *p);
  void waiter_loop();
  void stop_waiter();
  void failer_loop();
  void stop_failer();

  using EventTable = std::unordered_map<uint64_t, Pending>;

  Session &s_;
  ClientChannel &client_;
  const Devices &devs_;
  const char *sid_;

  // Event table: guarded by ev_mu_ (the command reader and callbacks).
  std::mutex ev_mu_;
  std::condition_variable drained_cv_;
  EventTable events_;
  std::vector<EventTable::node_type> spare_; // recycled table nodes
  std::vector<Pending *> finishing_;         // FINISH markers in flight
  // Covers in flight on silent_failures platforms, for sweep_failed.
  std::vector<Pending *> covers_;
  std::vector<cl_event> failed_;                    // see complete
  std::unordered_map<uint64_t, cl_int> failed_ids_; // retired with errors
  bool pending_limit_logged_ = false;
  // Gated commands in flight per queue id (Pending::gated).
  std::unordered_map<uint64_t, uint32_t> gated_by_queue_;
  std::atomic<uint64_t> inflight_{0}; // callbacks still to run
  std::atomic<bool> draining_{false};

  // Commands of Platform::wait_completion platforms, completed in order by
  // waiter_ (started on first use).  Guarded by wait_mu_.
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::deque<Pending *> waiting_;
  bool waiter_stop_ = false;
  std::thread waiter_;

  // Failures called back: PoCL calls a failed command's callbacks while it
  // still holds its failed dependency's event lock (pocl_broadcast), and
  // complete() takes ev_mu_, under which the command reader retains events
  // (a lock-order inversion ThreadSanitizer found): failer_ (started on
  // first use) completes them instead.  Guarded by failed_mu_, a leaf lock.
  std::mutex failed_mu_;
  std::condition_variable failed_cv_;
  std::vector<std::pair<Pending *, cl_int>> failing_;
  bool failer_stop_ = false;
  std::thread failer_;

  // Foreign events: the command reader and the peer readers.
  std::mutex foreign_mu_;
  std::unordered_map<uint64_t, Foreign> foreign_;
  // Ids of the known entries of foreign_, oldest first (kForeignKnownKept).
  std::deque<uint64_t> foreign_known_;
  // sweep_failed() runs on peer readers too; it must not overlap with the
  // command reader's callback registrations (see sweep_failed).
  std::mutex sweep_mu_;
  // order_gates' scratch, kept for its capacity (the command reader's alone)
  std::vector<cl_event> gate_bridges_;
};

inline void Pending::set_kind(Kind k)
{
  kind = k;
  done = Completions::kDone[k];
}

} // namespace pocld
