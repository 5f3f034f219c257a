// trace.cc - pocld's command trace: records in memory, one Chrome
// trace-event JSON file per session process (doc/tracing.md).
#include "trace.hh"

#include "log.hh"
#include "pocl_remote_protocol.h"
#include "pocl_remote_trace_clock.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <pthread.h>
#include <sys/syscall.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace pocld {

namespace {

struct Rec {
  uint64_t t0, t1; // t1 == 0: a point event
  uint64_t id, bytes;
  uint32_t tid, type;
  TraceEv what;
};

struct Thread {
  uint32_t tid;
  char name[16];
};

const char *const kNames[] = {"recv",           "data_recv",
                              "native_enqueue",
                              "native_complete", "completion_send",
                              "peer_send",       "peer_recv"};
static_assert(sizeof kNames / sizeof *kNames == size_t(TraceEv::Count),
              "a name per event");

std::mutex g_mu;
std::deque<Rec> g_recs; // grows without moving records
std::vector<Thread> g_threads;
std::string g_path;
char g_session[33] = "";
char g_sid[9] = "-";
thread_local uint32_t t_tid = 0;

void put_us(FILE *f, uint64_t ns)
{
  fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000),
          (unsigned long long)(ns % 1000));
}

void write_rec(FILE *f, int pid, const Rec &r)
{
  uint64_t dur = r.t1 > r.t0 ? r.t1 - r.t0 : 1;
  fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"pocld\",\"ph\":\"X\",\"ts\":",
          kNames[size_t(r.what)]);
  put_us(f, r.t0);
  fputs(",\"dur\":", f);
  put_us(f, dur);
  fprintf(f,
          ",\"pid\":%d,\"tid\":%u,\"args\":{\"id\":%llu,\"msg\":%u,"
          "\"bytes\":%llu}}",
          pid, r.tid, (unsigned long long)r.id, r.type,
          (unsigned long long)r.bytes);
  // A step of the command's flow, which the client begins and ends.
  fprintf(f,
          ",\n{\"name\":\"command\",\"cat\":\"flow\",\"ph\":\"t\",\"id\":%llu,"
          "\"bp\":\"e\",\"ts\":",
          (unsigned long long)r.id);
  put_us(f, r.t0);
  fprintf(f, ",\"pid\":%d,\"tid\":%u}", pid, r.tid);
}

// SIGTERM and SIGINT, blocked in every thread of a traced session process,
// are taken here: the trace is written, then the process ends as the
// default action would have ended it.
void signal_thread(sigset_t set)
{
  int sig = 0;
  sigwait(&set, &sig);
  trace_flush();
  signal(sig, SIG_DFL);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  _exit(128 + sig);
}

} // namespace

uint64_t trace_now()
{
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

void trace_record(TraceEv what, uint64_t id, uint32_t msg_type, uint64_t bytes,
                  uint64_t t0, uint64_t t1)
{
  if (t0 == 0)
    t0 = trace_now();
  const bool new_thread = t_tid == 0;
  if (new_thread)
    t_tid = uint32_t(syscall(SYS_gettid));
  std::lock_guard<std::mutex> lock(g_mu);
  if (new_thread) {
    Thread t{t_tid, ""};
    if (pthread_getname_np(pthread_self(), t.name, sizeof t.name) != 0)
      snprintf(t.name, sizeof t.name, "thread");
    g_threads.push_back(t);
  }
  g_recs.push_back(Rec{t0, t1, id, bytes, t_tid, msg_type, what});
}

void trace_msg(TraceEv what, uint32_t type, uint64_t id, const void *body,
               uint64_t bytes, uint64_t t0)
{
  switch (type) {
  case POCL_RMSG_NOTIFY_EVENT:
  case POCL_RMSG_SUBSCRIBE:
  case POCL_RMSG_PEER_NOTIFY:
    // hdr.id is not the event: the body's first field is.
    memcpy(&id, body, sizeof id);
    break;
  case POCL_RMSG_DATA:
  case POCL_RMSG_COMPLETION:
  case POCL_RMSG_READ_DATA:
  case POCL_RMSG_PEER_DATA:
    break;
  default:
    if (type < POCL_RMSG_NDRANGE || type > POCL_RMSG_MIGRATE_IN)
      return;
  }
  trace_record(what, id, type, bytes, t0, t0 != 0 ? trace_now() : 0);
}

void trace_session(const uint8_t id[16])
{
  if (!trace_on)
    return;
  for (int i = 0; i < 16; ++i)
    snprintf(g_session + 2 * i, 3, "%02x", id[i]);
  memcpy(g_sid, g_session, 8);
  g_sid[8] = 0;
  g_path = trace_prefix + "." + g_sid + ".json";
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  try {
    std::thread(signal_thread, set).detach();
  } catch (const std::system_error &) {
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    LOG_WARN(g_sid, "no signal thread: the trace is written only at the "
                    "session's end");
  }
  LOG_INFO(g_sid, "tracing to %s", g_path.c_str());
}

void trace_flush()
{
  if (!trace_on || g_path.empty())
    return;
  std::lock_guard<std::mutex> lock(g_mu);
  const std::string tmp = g_path + ".tmp";
  FILE *f = fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    LOG_ERR(g_sid, "cannot write the trace %s: %s", tmp.c_str(),
            strerror(errno));
    return;
  }
  const int pid = int(getpid());
  char boot_id[POCL_REMOTE_BOOT_ID_LEN + 1];
  int64_t mono_offset = 0;
  pocl_remote_trace_clock(boot_id, &mono_offset);
  fprintf(f,
          "{\"displayTimeUnit\":\"ns\",\"pocl_remote\":{\"role\":\"server\","
          "\"pid\":%d,\"clock\":\"CLOCK_MONOTONIC\",\"boot_id\":\"%s\","
          "\"monotonic_offset_ns\":%lld,\"session\":\"%s\"},\n"
          "\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\","
          "\"pid\":%d,\"args\":{\"name\":\"pocld session %s (%d)\"}}",
          pid, boot_id, (long long)mono_offset, g_session, pid, g_sid, pid);
  for (const Thread &t : g_threads)
    fprintf(f,
            ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
            "\"args\":{\"name\":\"%s\"}}",
            pid, t.tid, t.name);
  for (const Rec &r : g_recs)
    write_rec(f, pid, r);
  fputs("\n]}\n", f);
  if (fclose(f) != 0 || rename(tmp.c_str(), g_path.c_str()) != 0)
    LOG_ERR(g_sid, "cannot write the trace %s: %s", g_path.c_str(),
            strerror(errno));
}

} // namespace pocld
