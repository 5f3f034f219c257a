// child.cc - the processes the listener forks: one per session, and one
// that logs the devices at startup.
#include "child.hh"

#include "control.hh"
#include "devices.hh"
#include "log.hh"
#include "output.hh"
#include "session.hh"
#include "trace.hh"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <pthread.h>
#include <string>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace pocld {

namespace {

// Once its session has ended, how long a process may spend releasing the
// session's objects before it exits without finishing: the release waits for
// the native commands still queued, and a kernel that never returns would
// wait forever.  Exiting takes such a kernel with it.
constexpr int kTeardownLimitMs = 2000;
// Exit status of a process whose teardown hit that limit.
constexpr int kExitTeardownLimit = 3;
// How long a new session process waits for the listener to register its id.
constexpr int kRegisterTimeoutMs = 5000;

// Connections of a transport with the HELLO inside (TLS) that a session
// process may have in their handshake at once (its data socket and peers
// need a few): more are closed, so that whoever knows a session's route
// cannot pile up threads in its process.
constexpr int kMaxHandshakes = 8;
std::atomic<int> g_handshakes{0};

const uint8_t kZeroId[16] = {};

void refuse(Conn c, const char *sid, const char *peer, const char *why,
            bool answer)
{
  LOG_WARN(sid, "refusing %s: %s", peer, why);
  if (answer)
    send_hello_reply(c, CL_INVALID_VALUE, kZeroId, 0);
  pocl_remote_link_close(&c);
}

// Draws a session id and has the listener register it (it refuses one that
// is taken, then another is drawn).  The listener knows the id before the
// client does, so the client's data socket always finds the session.
bool register_session(int ctl, SessionId &id)
{
  for (int tries = 0; tries < 4; ++tries) {
    if (getrandom(id.data(), id.size(), 0) != ssize_t(id.size())) {
      LOG_ERR("-", "getrandom: %s", strerror(errno));
      return false;
    }
    CtlMsg m{};
    m.type = kCtlRegister;
    memcpy(m.id, id.data(), sizeof m.id);
    if (!ctl_send(ctl, m, -1, false))
      return false;
    pollfd p{ctl, POLLIN, 0};
    int pr;
    do
      pr = poll(&p, 1, kRegisterTimeoutMs);
    while (pr < 0 && errno == EINTR);
    if (pr != 1)
      return false;
    CtlMsg r;
    int fd = -1;
    int got = ctl_recv(ctl, r, &fd);
    if (fd >= 0)
      close(fd);
    if (got != 1 || r.type != kCtlRegistered ||
        memcmp(r.id, m.id, sizeof m.id) != 0)
      return false;
    if (r.status == 0)
      return true;
  }
  return false;
}

// A data socket the listener handed over: attach it, then read it.
void serve_data(Session *s, Conn c, const std::string &peer)
{
  if (!s->attach_data(c))
    return refuse(c, s->sid(), peer.c_str(), "the session is ending", true);
  LOG_INFO(s->sid(), "data socket from %s", peer.c_str());
  s->run_data();
}

void serve_peer_resume(Session *s, Conn c, uint32_t hello_index,
                       uint64_t theirs, const std::string &peer)
{
  const uint64_t seen[2] = {theirs, POCL_REMOTE_PEER_RESUME};
  if (!s->attach_peer(c, hello_index, seen))
    refuse(c, s->sid(), peer.c_str(), "no link of that index to resume", true);
}

void serve_lane(Session *s, Conn c, uint32_t number, const std::string &peer)
{
  if (!s->attach_lane(c, number))
    refuse(c, s->sid(), peer.c_str(), "lane taken", true);
}

// With a transport that carries the HELLO inside (TLS), a data, lane, peer
// or resuming command socket that the listener routed by the transport's
// greeting (`role`): the transport's handshake, then HELLO and AUTH inside
// it, checked as the listener checks them on a plain connection, and the
// session id too.
void serve_inside(Session *s, int fd, uint32_t role, const std::string &peer)
{
  std::string why;
  Conn c(fd);
  HelloMsg msg;
  bool answer = false;
  const char *bad = nullptr;
  const uint32_t port = role == POCL_REMOTE_ROLE_PEER ? POCL_REMOTE_ROLE_PEER
                                                      : POCL_REMOTE_ROLE_DATA;
  if (!link_transport().accept(c, true, kHandshakeTimeoutMs, why, &answer))
    bad = why.c_str();
  else if (!recv_deadline(c, &msg, sizeof msg, kHandshakeTimeoutMs))
    bad = "no handshake";
  else if ((bad = hello_problem(msg, port, &answer)) == nullptr) {
    unsigned char d = 0;
    for (size_t i = 0; i < sizeof msg.hello.session_id; ++i)
      d |= msg.hello.session_id[i] ^ s->id()[i];
    if (d != 0 || msg.hello.role != role) {
      bad = d != 0 ? "unknown session" : "HELLO's role is not STARTTLS's";
      answer = true;
    } else
      bad = authenticate(c, msg.hello, &answer);
  }
  --g_handshakes;
  if (bad != nullptr)
    return refuse(c, s->sid(), peer.c_str(), bad, answer);
  if (role == POCL_REMOTE_ROLE_PEER) {
    if (!s->attach_peer(c, msg.hello.peer_index, msg.hello.seen))
      refuse(c, s->sid(), peer.c_str(),
             "peer index or lane taken, or a lane of no link", true);
    return;
  }
  if (role == POCL_REMOTE_ROLE_LANE)
    return serve_lane(s, c, msg.hello.peer_index, peer);
  if (role == POCL_REMOTE_ROLE_COMMAND) {
    LOG_INFO(s->sid(), "%s resumes the session", peer.c_str());
    Resume r;
    r.link = c;
    memcpy(r.seen, msg.hello.seen, sizeof r.seen);
    r.peer = peer;
    s->offer_resume(std::move(r));
    return;
  }
  serve_data(s, c, peer);
}

// Reads the control socket: sockets handed over by the listener.  When the
// listener goes away (it also kills us then, see child_setup) or breaks the
// protocol, the session ends.
void control_loop(Session *s, int ctl)
{
  for (;;) {
    CtlMsg m;
    int fd = -1;
    int r = ctl_recv(ctl, m, &fd);
    if (r == 0)
      break;
    if (r < 0 || m.type != kCtlAttach || fd < 0 ||
        memcmp(m.id, s->id().data(), sizeof m.id) != 0) {
      LOG_ERR(s->sid(), "bad control message from the listener (%s)",
              r < 0 ? strerror(errno) : "unexpected");
      if (fd >= 0)
        close(fd);
      break;
    }
    // The listener has read no HELLO: every role goes this way.
    if (link_transport().hello_inside && m.role <= POCL_REMOTE_ROLE_LANE) {
      if (++g_handshakes > kMaxHandshakes) {
        --g_handshakes;
        refuse(fd, s->sid(), m.peer, "too many handshakes at once", false);
        continue;
      }
      try {
        std::thread(serve_inside, s, fd, m.role, std::string(m.peer)).detach();
      } catch (const std::system_error &e) {
        --g_handshakes;
        refuse(fd, s->sid(), m.peer, "cannot start a thread", false);
      }
      continue;
    }
    if (m.role == POCL_REMOTE_ROLE_PEER &&
        m.seen[1] == POCL_REMOTE_PEER_RESUME) {
      // In a thread: a resume waits for the link's reader to leave the old
      // link.
      try {
        std::thread(serve_peer_resume, s, Conn(fd), m.peer_index, m.seen[0],
                    std::string(m.peer))
            .detach();
      } catch (const std::system_error &e) {
        refuse(fd, s->sid(), m.peer, "cannot start a thread", true);
      }
      continue;
    }
    if (m.role == POCL_REMOTE_ROLE_PEER) {
      if (!s->attach_peer(fd, m.peer_index, m.seen))
        refuse(fd, s->sid(), m.peer,
               "peer index or lane taken, or a lane of no link", true);
      continue;
    }
    if (m.role == POCL_REMOTE_ROLE_LANE) {
      // In a thread: attaching waits for a striped send in progress.
      try {
        std::thread(serve_lane, s, Conn(fd), m.peer_index, std::string(m.peer))
            .detach();
      } catch (const std::system_error &e) {
        refuse(fd, s->sid(), m.peer, "cannot start a thread", true);
      }
      continue;
    }
    if (m.role == POCL_REMOTE_ROLE_COMMAND) {
      LOG_INFO(s->sid(), "%s resumes the session", m.peer);
      Resume r;
      r.link = Conn(fd);
      memcpy(r.seen, m.seen, sizeof r.seen);
      r.peer = m.peer;
      s->offer_resume(std::move(r));
      continue;
    }
    if (m.role != POCL_REMOTE_ROLE_DATA) {
      refuse(fd, s->sid(), m.peer, "unknown role", true);
      continue;
    }
    try {
      std::thread(serve_data, s, fd, std::string(m.peer)).detach();
    } catch (const std::system_error &e) {
      refuse(fd, s->sid(), m.peer, "cannot start the data reader", true);
    }
  }
  s->shutdown_sockets();
}

double ms_since(uint64_t t0) { return (monotonic_ns() - t0) / 1e6; }

} // namespace

void child_setup(pid_t listener)
{
  // A listener that is gone (crashed, SIGKILLed) takes its sessions along:
  // clients see their connection close instead of talking to an orphan.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != listener)
    _exit(0);
  // The listener blocks these outside its poll; here SIGTERM and SIGINT end
  // the process at once (its session dies with it, nothing to save).
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGCHLD, SIG_DFL);
  // SIGHUP reloads the listener only; a session keeps running through one
  // sent to the whole service.
  signal(SIGHUP, SIG_IGN);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGCHLD);
  pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
}

void run_session_process(int fd, int ctl, const char *peer,
                         const std::vector<PlatformHint> &hints)
{
  const uint64_t t0 = monotonic_ns();
  Conn cmd(fd);
  {
    std::string why;
    bool answer;
    if (!link_transport().accept(cmd, false, kHandshakeTimeoutMs, why,
                                 &answer)) {
      refuse(cmd, "-", peer, why.c_str(), answer);
      _exit(0);
    }
  }
  HelloMsg msg;
  if (!recv_deadline(cmd, &msg, sizeof msg, kHandshakeTimeoutMs)) {
    refuse(cmd, "-", peer, "no handshake", false);
    _exit(0);
  }
  bool answer = false;
  if (const char *bad = hello_problem(msg, POCL_REMOTE_ROLE_COMMAND, &answer)) {
    refuse(cmd, "-", peer, bad, answer);
    _exit(0);
  }
  if (const char *bad = authenticate(cmd, msg.hello, &answer)) {
    refuse(cmd, "-", peer, bad, answer);
    _exit(0);
  }
  SessionId id;
  if (!register_session(ctl, id)) {
    LOG_ERR("-", "%s: the listener did not register a session", peer);
    _exit(1);
  }
  char sid[9];
  snprintf(sid, sizeof sid, "%02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
  // Before any thread: they inherit its signal mask.
  trace_session(id.data());

  // This process's standard output is this session's alone: kernel printf
  // output goes to this client and no other.
  start_output_capture();
  // Objects of the session process live until _exit: no destructor ever
  // runs, since native threads may still be using them.
  static const Devices devs = discover_devices(sid, false, hints, nullptr);
  Session *s = new Session(devs, id, cmd);
  try {
    std::thread(control_loop, s, ctl).detach();
  } catch (const std::system_error &e) {
    LOG_ERR(sid, "cannot start the control thread: %s", e.what());
    _exit(1);
  }
  // Logged first: the data socket's line comes right after the reply.
  LOG_INFO(sid, "new session from %s (process %d, set up in %.1f ms)", peer,
           int(getpid()), ms_since(t0));
  if (!send_hello_reply(cmd, CL_SUCCESS, id.data(),
                        static_cast<uint32_t>(devs.devices.size()))) {
    LOG_WARN(sid, "%s went away during the handshake", peer);
    _exit(0);
  }

  // A broken connection keeps the session for a resume (doc/reconnect.md).
  while (s->run_commands()) {
    s->detach();
    if (!s->wait_resume())
      break;
  }
  // Before the teardown, which may not finish.
  trace_flush();

  // Best effort, bounded: a kernel that never returns must not keep this
  // process (and the device) busy.
  try {
    std::thread([sid] {
      std::this_thread::sleep_for(std::chrono::milliseconds(kTeardownLimitMs));
      LOG_WARN(sid,
               "teardown did not finish within %d ms (a kernel still "
               "running?), exiting without it",
               kTeardownLimitMs);
      _exit(kExitTeardownLimit);
    }).detach();
  } catch (const std::system_error &) {
    LOG_INFO(sid, "session ended (no teardown)");
    _exit(0);
  }
  s->teardown();
  LOG_INFO(sid, "session ended");
  _exit(0);
}

void run_device_logger(int out)
{
  std::vector<PlatformHint> learnt;
  Devices d = discover_devices("-", true, {}, &learnt);
  if (d.devices.empty())
    LOG_WARN("-", "no OpenCL devices: sessions will have none");
  std::string text = "devices " + std::to_string(d.devices.size()) + "\n" +
                     format_hints(learnt);
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = write(out, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(1);
    p += n;
    left -= n;
  }
  _exit(0);
}

} // namespace pocld
