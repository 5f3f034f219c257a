// fault_proxy.cc - a TCP proxy in front of pocld that cuts connections at
// chosen points of the PoCL-R framing: inside a message's 24-byte header,
// inside its body, inside its payload, after N messages, at random (seeded),
// or when told to (SIGUSR1 or its control socket).  Usage and examples:
// doc/fault-injection.md.
//
// It listens on P and P + 1 and forwards to the target's command port T and
// data port T + 1 (POCL_REMOTE_DATA_PORT_OFFSET).  It follows the framing of
// both directions of every connection with the protocol header's own
// pocl_remote_hdr, so a cut lands on an exact byte of a known message.  A
// message's header is held back until it is complete (at most 24 bytes), so
// that rules can look at its type; everything else is forwarded as it comes.
#include "pocl_remote_protocol.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace {

void logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void logf(const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "fault_proxy: %s\n", buf);
}

[[noreturn]] void die(const char *what)
{
  logf("%s: %s", what, strerror(errno));
  exit(1);
}

std::string describe_type(uint32_t t)
{
  const char *n = pocl_remote_msg_name (POCL_RMSG_TYPE_OF (t));
  std::string s = n ? n : "type " + std::to_string (POCL_RMSG_TYPE_OF (t));
  if (POCL_RMSG_LANE_COUNT (t) > 0)
    s += " striped over " + std::to_string (POCL_RMSG_LANE_COUNT (t))
         + " lanes";
  return s;
}

enum Part { kHeader, kBody, kPayload, kBoundary, kAnyPart };
const char *const kPartNames[] = {"header", "body", "payload", "boundary",
                                  "random"};

// One cut to make: the first message that matches (after `after` earlier
// matches) is cut at `part`.  Fires once.
struct Rule {
  int sock = 0;  // 0 command, 1 data, -1 any
  int dir = 0;   // 0 client to server, 1 server to client, -1 any
  int64_t type = -1;
  Part part = kBoundary;
  int64_t offset = -1; // byte within the part; -1: random
  uint64_t after = 0;
  int conn = 0;        // only the conn-th connection of its socket; 0: any
  bool all = false;    // cut every connection, not only this one
  bool fired = false;
  uint64_t seen = 0;
};

struct Dir {
  int from = -1, to = -1;
  std::vector<uint8_t> pend; // read, not yet written to `to`
  size_t pend_off = 0;
  bool eof = false;
  // Framing.
  uint8_t hdr_buf[sizeof(pocl_remote_hdr)];
  size_t hdr_got = 0;
  bool in_msg = false;
  pocl_remote_hdr hdr{};
  uint64_t pos = 0, len = 0;   // within the current message
  uint64_t cut_at = UINT64_MAX; // position in the message to cut at
  Part cut_part = kHeader;
  bool cut_all = false;
  uint64_t msgs = 0;           // complete messages
  // A lane's stripes have no framing: forwarded as they come, cut only
  // with every connection (scope=all, SIGUSR1, the control socket).
  bool raw = false;
  uint8_t hello[16] = {}; // a first message's magic, version, role, index
};

struct Conn {
  int id;      // per socket kind, from 1
  int sock;    // 0 command, 1 data
  int cfd, sfd;
  Dir d[2];    // 0 client to server, 1 server to client
  bool dead = false;
};

std::vector<std::unique_ptr<Conn>> g_conns;
std::vector<Rule> g_rules;
std::mt19937_64 g_rng;
double g_random = 0; // probability of a cut per message
int g_random_sock = -1, g_random_dir = -1;
// Random cuts spare the first this many messages (of either direction, every
// connection): a client's first handshake has nothing to resume.
uint64_t g_random_after = 0, g_messages = 0;
// "pause" (control socket): the link is down; new connections are closed at
// once, until "resume".
bool g_paused = false;
bool g_rst = false;
int g_next_id[2] = {1, 1};
uint64_t g_cuts = 0;
volatile sig_atomic_t g_sigcut = 0, g_stop = 0;

const char *sock_name(int s) { return s == 0 ? "cmd" : "data"; }
const char *dir_name(int d) { return d == 0 ? "c2s" : "s2c"; }

bool parse_rule(const std::string &spec, Rule &r, std::string &err)
{
  size_t i = 0;
  while (i < spec.size()) {
    size_t end = spec.find(',', i);
    if (end == std::string::npos)
      end = spec.size();
    std::string kv = spec.substr(i, end - i);
    i = end + 1;
    size_t eq = kv.find('=');
    std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    char *e = nullptr;
    if (k == "sock")
      r.sock = v == "cmd" ? 0 : v == "data" ? 1 : v == "any" ? -1 : -2;
    else if (k == "dir")
      r.dir = v == "c2s" ? 0 : v == "s2c" ? 1 : v == "any" ? -1 : -2;
    else if (k == "at") {
      int p = -1;
      for (int j = 0; j < 5; ++j)
        if (v == kPartNames[j])
          p = j;
      if (p < 0) {
        err = "at= takes header, body, payload, boundary or random";
        return false;
      }
      r.part = Part(p);
    } else if (k == "type") {
      r.type = -1;
      for (uint32_t t = 0; t < POCL_RMSG_TYPE_COUNT; ++t)
        if (pocl_remote_msg_name(t) && v == pocl_remote_msg_name(t))
          r.type = t;
      if (r.type < 0) {
        r.type = strtol(v.c_str(), &e, 10);
        if (*e != '\0' || v.empty()) {
          err = "unknown message type " + v;
          return false;
        }
      }
    } else if (k == "offset" || k == "after" || k == "conn") {
      long long n = strtoll(v.c_str(), &e, 10);
      if (v.empty() || *e != '\0' || n < 0) {
        err = k + "= takes a number";
        return false;
      }
      if (k == "offset")
        r.offset = n;
      else if (k == "after")
        r.after = uint64_t(n);
      else
        r.conn = int(n);
    } else if (k == "scope")
      r.all = v == "all";
    else {
      err = "unknown key " + k;
      return false;
    }
    if (r.sock == -2 || r.dir == -2) {
      err = "sock= takes cmd, data or any; dir= c2s, s2c or any";
      return false;
    }
  }
  return true;
}

uint64_t pick(uint64_t lo, uint64_t hi) // inclusive
{
  return lo + g_rng() % (hi - lo + 1);
}

// Where in the message (header just complete) to cut, for a rule's part;
// UINT64_MAX when the message has no such part.
uint64_t cut_position(const Dir &d, Part part, int64_t offset)
{
  // p: the payload on this socket (of a striped one, stream 0's stripes).
  const uint64_t h = sizeof (pocl_remote_hdr), b = d.hdr.body_size,
                 p = d.len - h - b;
  if (part == kAnyPart) {
    Part parts[3] = {kHeader, kBody, kPayload};
    int n = 1;
    if (b > 0)
      parts[n++] = kBody;
    if (p > 0)
      parts[n++] = kPayload;
    part = parts[pick(0, n - 1)];
    offset = -1;
  }
  switch (part) {
  case kHeader:
    return offset >= 0 ? (offset >= 1 && uint64_t(offset) < h ? offset : UINT64_MAX)
                       : pick(1, h - 1);
  case kBody:
    if (b == 0)
      return UINT64_MAX;
    return offset >= 0 ? (uint64_t(offset) < b ? h + offset : UINT64_MAX)
                       : h + (b > 1 ? pick(1, b - 1) : 0);
  case kPayload:
    if (p == 0)
      return UINT64_MAX;
    return offset >= 0 ? (uint64_t(offset) < p ? h + b + offset : UINT64_MAX)
                       : h + b + (p > 1 ? pick(1, p - 1) : 0);
  default:
    return d.len; // boundary: right after the message
  }
}

bool matches(const Rule &r, const Conn &c, int dir, const pocl_remote_hdr &h)
{
  return !r.fired && (r.sock < 0 || r.sock == c.sock)
         && (r.dir < 0 || r.dir == dir) && (r.conn == 0 || r.conn == c.id)
         && (r.type < 0 || uint32_t (r.type) == POCL_RMSG_TYPE_OF (h.type));
}

// The header of a message is complete: decide whether and where to cut it.
void plan_cut(Conn &c, int dir)
{
  Dir &d = c.d[dir];
  d.cut_at = UINT64_MAX;
  d.cut_all = false;
  for (Rule &r : g_rules) {
    if (!matches(r, c, dir, d.hdr) || r.seen++ < r.after)
      continue;
    uint64_t at = cut_position(d, r.part, r.offset);
    if (at == UINT64_MAX)
      continue; // no such part: the next matching message
    r.fired = true;
    d.cut_at = at;
    d.cut_part = r.part == kAnyPart ? kHeader : r.part;
    d.cut_all = r.all;
    break;
  }
  if (d.cut_at == UINT64_MAX && g_random > 0 && ++g_messages > g_random_after &&
      (g_random_sock < 0 || g_random_sock == c.sock) &&
      (g_random_dir < 0 || g_random_dir == dir) &&
      std::uniform_real_distribution<double>(0, 1)(g_rng) < g_random)
    d.cut_at = cut_position(d, kAnyPart, -1);
  if (d.cut_at != UINT64_MAX && d.cut_at < d.len) {
    const uint64_t h = sizeof(pocl_remote_hdr), b = d.hdr.body_size;
    d.cut_part = d.cut_at < h ? kHeader : d.cut_at < h + b ? kBody : kPayload;
  } else if (d.cut_at != UINT64_MAX)
    d.cut_part = kBoundary;
}

void close_conn(Conn &c)
{
  if (c.dead)
    return;
  for (int fd : {c.cfd, c.sfd}) {
    if (g_rst) {
      linger l{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    close(fd);
  }
  c.dead = true;
}

// sock: 0 or 1 those of one port, -1 all, -2 the lanes (raw ones).
void cut_conns(int sock, const char *why)
{
  for (auto &c : g_conns)
    if (!c->dead && (sock == -1 || c->sock == sock || (sock == -2 && c->d[0].raw))) {
      logf("cut %s#%d (%s): %llu/%llu messages c2s/s2c passed", sock_name(c->sock),
           c->id, why, (unsigned long long)c->d[0].msgs,
           (unsigned long long)c->d[1].msgs);
      close_conn(*c);
      ++g_cuts;
    }
}

bool write_all(int fd, const uint8_t *p, size_t n)
{
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno == EAGAIN) {
      pollfd pfd{fd, POLLOUT, 0};
      if (poll(&pfd, 1, 10000) <= 0)
        return false;
      continue;
    }
    if (w <= 0)
      return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Bytes arrived on c.d[dir].from: frame them, queue what passes, cut where
// planned.
void feed(Conn &c, int dir, const uint8_t *in, size_t n)
{
  Dir &d = c.d[dir];
  const uint64_t H = sizeof(pocl_remote_hdr);
  size_t i = 0;
  while (i < n) {
      if (d.raw)
        {
          d.pend.insert (d.pend.end (), in + i, in + n);
          break;
        }
    if (!d.in_msg) {
      size_t take = std::min<size_t>(H - d.hdr_got, n - i);
      memcpy(d.hdr_buf + d.hdr_got, in + i, take);
      d.hdr_got += take;
      i += take;
      if (d.hdr_got < H)
        break;
      memcpy(&d.hdr, d.hdr_buf, H);
      d.in_msg = true;
      d.pos = 0;
      // A striped payload: only stream 0's stripes follow on this socket.
      const uint32_t lanes = POCL_RMSG_LANE_COUNT (d.hdr.type);
      uint64_t rest = uint64_t (d.hdr.body_size)
                      + (lanes ? pocl_remote_stream_bytes (d.hdr.payload_size,
                                                           0, lanes + 1)
                               : d.hdr.payload_size);
      d.len = rest > UINT64_MAX - H ? UINT64_MAX : H + rest;
      plan_cut(c, dir);
      uint64_t upto = std::min<uint64_t>(H, d.cut_at);
      d.pend.insert(d.pend.end(), d.hdr_buf, d.hdr_buf + upto);
      d.pos = upto;
      d.hdr_got = 0;
    } else {
      uint64_t take = std::min<uint64_t>(d.len - d.pos, n - i);
      if (d.cut_at > d.pos && d.cut_at < d.pos + take)
        take = d.cut_at - d.pos;
      const uint64_t H16 = H + sizeof d.hello;
      if (d.msgs == 0 && d.pos >= H && d.pos < H16)
        memcpy (d.hello + (d.pos - H), in + i,
                std::min<uint64_t> (take, H16 - d.pos));
      d.pend.insert(d.pend.end(), in + i, in + i + take);
      d.pos += take;
      i += take;
    }
    if (d.pos == d.cut_at && d.cut_at != UINT64_MAX) {
      // The planned point: what came before it goes out, nothing after.
      write_all(d.to, d.pend.data() + d.pend_off, d.pend.size() - d.pend_off);
      d.pend.clear();
      d.pend_off = 0;
      logf("cut %s#%d %s %s %s (id %llu, message %llu, body %u, payload "
           "%llu) at byte %llu of %llu",
           sock_name(c.sock), c.id, dir_name(dir),
           d.cut_part == kBoundary ? "right after"
           : d.cut_part == kHeader ? "inside the header of"
           : d.cut_part == kBody   ? "inside the body of"
                                   : "inside the payload of",
           describe_type(d.hdr.type).c_str(), (unsigned long long)d.hdr.id,
           (unsigned long long)d.msgs + 1, d.hdr.body_size,
           (unsigned long long)d.hdr.payload_size,
           (unsigned long long)d.cut_at, (unsigned long long)d.len);
      ++g_cuts;
      close_conn(c);
      if (d.cut_all)
        cut_conns(-1, "scope=all");
      return;
    }
    if (d.in_msg && d.pos == d.len) {
      d.in_msg = false;
      // A lane's HELLO or STARTTLS, a peer lane's HELLO: raw from now on.
      uint32_t role, index;
      memcpy (&role, d.hello + 8, sizeof role);
      memcpy (&index, d.hello + 12, sizeof index);
      if (d.msgs++ == 0 && dir == 0 && d.len >= H + sizeof d.hello
          && (d.hdr.type == POCL_RMSG_HELLO
              || d.hdr.type == POCL_RMSG_STARTTLS)
          && (role == POCL_REMOTE_ROLE_LANE
              || (d.hdr.type == POCL_RMSG_HELLO && role == POCL_REMOTE_ROLE_PEER
                  && POCL_REMOTE_PEER_LANE_OF (index) != 0)))
        {
          c.d[0].raw = c.d[1].raw = true;
          if (i < n)
            d.pend.insert (d.pend.end (), in + i, in + n);
          break;
        }
    }
  }
}

int listen_on(const char *addr, int port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    die("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
    logf("bad listen address %s", addr);
    exit(2);
  }
  if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
      listen(fd, 64) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int connect_to(const char *host, int port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void nonblock_nodelay(int fd)
{
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void on_usr1(int) { g_sigcut = 1; }
void on_term(int) { g_stop = 1; }

void usage(FILE *f)
{
  fprintf(f,
          "usage: fault_proxy --target HOST:PORT [--listen-port P] "
          "[--port-file F]\n"
          "                   [--control PATH] [--seed N] [--rst] "
          "[--random PROB[,sock=..][,dir=..]]\n"
          "                   [--cut SPEC]...\n"
          "Proxies P -> PORT (command socket) and P+1 -> PORT+1 (data "
          "socket), IPv4.\n"
          "SPEC: comma-separated sock=cmd|data|any dir=c2s|s2c|any "
          "type=NAME|NUM\n"
          "      at=header|body|payload|boundary|random offset=K after=N "
          "conn=N scope=conn|all\n"
          "Control socket lines: 'cut [all|cmd|data]', 'arm SPEC', "
          "'stats'. SIGUSR1: cut all.\n");
}

} // namespace

int main(int argc, char **argv)
{
  std::string target_host, listen_addr = "127.0.0.1", port_file, control;
  int target_port = 0, listen_port = 0;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string o = argv[i];
    if (o == "-h" || o == "--help") {
      usage(stdout);
      return 0;
    }
    if (o == "--rst") {
      g_rst = true;
      continue;
    }
    if (i + 1 >= argc) {
      usage(stderr);
      return 2;
    }
    std::string v = argv[++i];
    if (o == "--target") {
      size_t c = v.rfind(':');
      if (c == std::string::npos) {
        usage(stderr);
        return 2;
      }
      target_host = v.substr(0, c);
      target_port = atoi(v.c_str() + c + 1);
    } else if (o == "--listen-port")
      listen_port = atoi(v.c_str());
    else if (o == "--listen-address")
      listen_addr = v;
    else if (o == "--port-file")
      port_file = v;
    else if (o == "--control")
      control = v;
    else if (o == "--seed")
      seed = strtoull(v.c_str(), nullptr, 10);
    else if (o == "--random") {
      Rule r;
      r.sock = r.dir = -1;
      size_t c = v.find(',');
      g_random = atof(v.substr(0, c).c_str());
      std::string err;
      if (c != std::string::npos && !parse_rule(v.substr(c + 1), r, err)) {
        logf("--random %s: %s", v.c_str(), err.c_str());
        return 2;
      }
      g_random_sock = r.sock;
      g_random_dir = r.dir;
      g_random_after = r.after;
    } else if (o == "--cut") {
      Rule r;
      std::string err;
      if (!parse_rule(v, r, err)) {
        logf("--cut %s: %s", v.c_str(), err.c_str());
        return 2;
      }
      g_rules.push_back(r);
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (target_host.empty() || target_port <= 0 || target_port > 65534) {
    usage(stderr);
    return 2;
  }
  g_rng.seed(seed);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGUSR1, on_usr1);
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);

  int lfd[2] = {-1, -1};
  for (int attempt = 0; attempt < 100 && lfd[1] < 0; ++attempt) {
    int p = listen_port ? listen_port : 20000 + int(g_rng() % 39990);
    lfd[0] = listen_on(listen_addr.c_str(), p);
    lfd[1] = lfd[0] < 0 ? -1 : listen_on(listen_addr.c_str(), p + 1);
    if (lfd[1] < 0 && lfd[0] >= 0)
      close(lfd[0]);
    if (lfd[1] >= 0)
      listen_port = p;
    else if (listen_port)
      die("bind");
  }
  if (lfd[1] < 0)
    die("bind (no free port pair)");
  int cfd = -1;
  if (!control.empty()) {
    cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", control.c_str());
    unlink(control.c_str());
    if (cfd < 0 || bind(cfd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        listen(cfd, 8) != 0)
      die("control socket");
  }
  if (!port_file.empty()) {
    std::string tmp = port_file + ".tmp";
    FILE *f = fopen(tmp.c_str(), "w");
    if (f == nullptr || fprintf(f, "PROXY_PORT=%d\n", listen_port) < 0 ||
        fclose(f) != 0 || rename(tmp.c_str(), port_file.c_str()) != 0)
      die("port file");
  }
  logf("listening on %s:%d and :%d, forwarding to %s:%d and :%d, %zu rules, "
       "random %g, seed %llu",
       listen_addr.c_str(), listen_port, listen_port + 1, target_host.c_str(),
       target_port, target_port + POCL_REMOTE_DATA_PORT_OFFSET, g_rules.size(),
       g_random, (unsigned long long)seed);

  std::vector<int> ctl_clients;
  std::vector<pollfd> fds;
  struct Ref { Conn *c; int dir; bool out; };
  std::vector<Ref> refs;
  std::vector<uint8_t> buf(1 << 16);
  while (!g_stop) {
    if (g_sigcut) {
      g_sigcut = 0;
      cut_conns(-1, "SIGUSR1");
    }
    fds.clear();
    refs.clear();
    fds.push_back({lfd[0], POLLIN, 0});
    fds.push_back({lfd[1], POLLIN, 0});
    fds.push_back({cfd, POLLIN, 0});
    for (int fd : ctl_clients)
      fds.push_back({fd, POLLIN, 0});
    for (auto &c : g_conns)
      for (int dir = 0; dir < 2 && !c->dead; ++dir) {
        Dir &d = c->d[dir];
        if (d.pend_off < d.pend.size()) {
          fds.push_back({d.to, POLLOUT, 0});
          refs.push_back({c.get(), dir, true});
        } else if (!d.eof) {
          fds.push_back({d.from, POLLIN, 0});
          refs.push_back({c.get(), dir, false});
        }
      }
    int n = poll(fds.data(), fds.size(), 1000);
    if (n < 0 && errno != EINTR)
      die("poll");
    if (n <= 0)
      continue;
    for (int s = 0; s < 2; ++s)
      if (fds[s].revents & POLLIN) {
        int cl = accept4(lfd[s], nullptr, nullptr, SOCK_CLOEXEC);
        if (cl < 0)
          continue;
        if (g_paused) {
          logf("paused: closing a new %s connection", sock_name(s));
          close(cl);
          continue;
        }
        int sv = connect_to(target_host.c_str(),
                            target_port + s * POCL_REMOTE_DATA_PORT_OFFSET);
        if (sv < 0) {
          logf("cannot reach the target for a %s connection: %s",
               sock_name(s), strerror(errno));
          close(cl);
          continue;
        }
        nonblock_nodelay(cl);
        nonblock_nodelay(sv);
        auto c = std::make_unique<Conn>();
        c->id = g_next_id[s]++;
        c->sock = s;
        c->cfd = cl;
        c->sfd = sv;
        c->d[0].from = c->d[1].to = cl;
        c->d[0].to = c->d[1].from = sv;
        logf("%s#%d connected", sock_name(s), c->id);
        g_conns.push_back(std::move(c));
      }
    if (cfd >= 0 && (fds[2].revents & POLLIN)) {
      int cl = accept4(cfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (cl >= 0)
        ctl_clients.push_back(cl);
    }
    for (size_t j = 0; j < ctl_clients.size(); ++j) {
      if (!fds[3 + j].revents)
        continue;
      char line[512];
      ssize_t r = recv(ctl_clients[j], line, sizeof line - 1, 0);
      std::string reply;
      if (r > 0) {
        line[r] = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        std::string cmd = line;
        if (cmd == "cut" || cmd == "cut all" || cmd == "cut cmd" ||
            cmd == "cut data" || cmd == "cut lanes") {
          uint64_t before = g_cuts;
          cut_conns(cmd == "cut cmd" ? 0 : cmd == "cut data" ? 1
                    : cmd == "cut lanes" ? -2 : -1,
                    "control socket");
          reply = "ok " + std::to_string(g_cuts - before) + " cut\n";
        } else if (cmd == "pause") {
          g_paused = true;
          cut_conns(-1, "pause");
          reply = "ok paused\n";
        } else if (cmd == "resume") {
          g_paused = false;
          logf("resumed");
          reply = "ok resumed\n";
        } else if (cmd.rfind("arm ", 0) == 0) {
          Rule rule;
          std::string err;
          if (parse_rule(cmd.substr(4), rule, err)) {
            g_rules.push_back(rule);
            logf("armed: %s", cmd.c_str() + 4);
            reply = "ok armed\n";
          } else
            reply = "error " + err + "\n";
        } else if (cmd == "stats") {
          size_t live = 0;
          for (auto &c : g_conns)
            live += !c->dead;
          reply = "ok connections " + std::to_string(g_conns.size()) +
                  " live " + std::to_string(live) + " cuts " +
                  std::to_string(g_cuts) + "\n";
        } else
          reply = "error unknown command\n";
        write_all(ctl_clients[j], reinterpret_cast<const uint8_t *>(reply.data()),
                  reply.size());
      }
      close(ctl_clients[j]); // one command per connection
      ctl_clients.erase(ctl_clients.begin() + j);
      fds.erase(fds.begin() + 3 + j);
      --j;
    }
    const size_t shift = 3 + ctl_clients.size();
    for (size_t j = 0; j < refs.size(); ++j) {
      pollfd &p = fds[shift + j];
      Conn &c = *refs[j].c;
      if (c.dead || p.revents == 0)
        continue;
      Dir &d = c.d[refs[j].dir];
      if (refs[j].out) {
        ssize_t w = send(d.to, d.pend.data() + d.pend_off,
                         d.pend.size() - d.pend_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
          d.pend_off += size_t(w);
          if (d.pend_off == d.pend.size()) {
            d.pend.clear();
            d.pend_off = 0;
            if (d.eof)
              shutdown(d.to, SHUT_WR);
          }
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
          close_conn(c);
        }
        continue;
      }
      ssize_t r = recv(d.from, buf.data(), buf.size(), MSG_DONTWAIT);
      if (r > 0) {
        feed(c, refs[j].dir, buf.data(), size_t(r));
        // Forward at once where possible; the rest waits for POLLOUT.
        if (!c.dead && d.pend.size() > d.pend_off) {
          ssize_t w = send(d.to, d.pend.data() + d.pend_off,
                           d.pend.size() - d.pend_off,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
          if (w > 0)
            d.pend_off += size_t(w);
          if (d.pend_off == d.pend.size()) {
            d.pend.clear();
            d.pend_off = 0;
          }
        }
      } else if (r == 0) {
        // Half close, passed on once the queued bytes are out.
        d.eof = true;
        if (d.pend.empty())
          shutdown(d.to, SHUT_WR);
      } else if (errno != EAGAIN && errno != EINTR) {
        logf("%s#%d %s: %s, closing", sock_name(c.sock), c.id,
             dir_name(refs[j].dir), strerror(errno));
        close_conn(c);
      }
    }
    for (auto &c : g_conns)
      if (!c->dead && c->d[0].eof && c->d[1].eof && c->d[0].pend.empty() &&
          c->d[1].pend.empty()) {
        logf("%s#%d closed by its peers", sock_name(c->sock), c->id);
        close_conn(*c);
      }
    // Forget closed connections (pointers in refs are rebuilt each round).
    for (size_t j = g_conns.size(); j-- > 0;)
      if (g_conns[j]->dead)
        g_conns.erase(g_conns.begin() + j);
  }
  size_t cut_total = g_cuts;
  logf("stopping: %llu cuts", (unsigned long long)cut_total);
  for (auto &c : g_conns)
    close_conn(*c);
  if (!control.empty())
    unlink(control.c_str());
  return 0;
}
