// options.cc - pocld's option table, its --help, the command line and the
// configuration file.  Every option is a row of table(): the command line
// takes it as --name V (or --name=V), the file as `name = V`, so an option
// added there is at once in both and in --help.
#include "options.hh"

#include "log.hh"
#include "pocl_remote_auth.h"
#include "pocl_remote_protocol.h"
#include "session.hh"
#include "trace.hh"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#ifndef POCLD_DEFAULT_CONFIG
#define POCLD_DEFAULT_CONFIG "/etc/pocld.conf"
#endif

namespace pocld {

namespace {

constexpr long kDefaultSessions = 64;
constexpr long kSessionsCap = 4096;
constexpr long kPendingCap = 1L << 24;
constexpr long kGraceCapS = 86400;
// Longer lines in the configuration file are refused, not cut.
constexpr size_t kMaxLine = 4096;

__attribute__((format(printf, 1, 2))) std::string fmt(const char *f, ...)
{
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// What is wrong with the value, or "".
using Setter = std::string (*)(Settings &, const char *value);

struct Option {
  const char *name; // --name, and the configuration file's key
  const char *arg;  // the value's name in --help; null: a boolean
  bool in_file;     // false: command line only
  std::string help; // lines after the first are indented under it
  Setter set;       // null: handled by parse_options itself
};

std::string number(const char *what, const char *v, long lo, long hi, long &out)
{
  char *end = nullptr;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || errno != 0 || n < lo || n > hi)
    return fmt("bad %s '%s' (%ld to %ld)", what, v, lo, hi);
  out = n;
  return {};
}

std::string path(std::string &out, const char *v)
{
  if (*v == '\0')
    return "empty file name";
  out = v;
  return {};
}

const std::vector<Option> &table()
{
  static const std::vector<Option> t = {
      {"config", "F", false,
       fmt("read options from F (default %s\n"
           "where it exists); the command line overrides it",
           POCLD_DEFAULT_CONFIG),
       nullptr},
      {"address", "A", true,
       "address to listen on, IPv4 or IPv6 (default 127.0.0.1)",
       [](Settings &s, const char *v) {
         s.address = v;
         return s.address.empty() ? std::string("empty address")
                                  : std::string();
       }},
      {"port", "P", true,
       fmt("command port; P + 1 is the data port (default %d)",
           POCL_REMOTE_DEFAULT_PORT),
       [](Settings &s, const char *v) {
         return number("port", v, 1, 65535, s.port);
       }},
      {"peer-port", "Q", true,
       "port for other servers of the same clients (default P + 2)",
       [](Settings &s, const char *v) {
         return number("peer port", v, 1, 65535, s.peer_port);
       }},
      {"max-sessions", "N", true,
       fmt("sessions at once, 1 to %ld; more are refused (default %ld)",
           kSessionsCap, kDefaultSessions),
       [](Settings &s, const char *v) {
         return number("session limit", v, 1, kSessionsCap, s.max_sessions);
       }},
      {"max-pending", "C", true,
       fmt("commands one session may have in flight, 1 to %ld;\n"
           "more fail with CL_OUT_OF_RESOURCES (default %u)",
           kPendingCap, max_pending_commands),
       [](Settings &, const char *v) {
         long n = 0;
         std::string bad =
             number("pending-command limit", v, 1, kPendingCap, n);
         if (bad.empty())
           max_pending_commands = static_cast<uint32_t>(n);
         return bad;
       }},
      {"psk-file", "F", true,
       fmt("require clients and peers to prove this pre-shared key\n"
           "(file of at least %u bytes; or env POCLD_PSK)",
           POCL_REMOTE_MIN_KEY),
       [](Settings &s, const char *v) { return path(s.psk_file, v); }},
      {"insecure", nullptr, true, "serve a non-loopback address without a key",
       [](Settings &s, const char *v) {
         s.insecure = strcmp(v, "true") == 0;
         return std::string();
       }},
      {"session-grace", "S", true,
       fmt("seconds a session whose client lost its connection\n"
           "waits for it to reconnect, 0 to %ld (default %d)",
           kGraceCapS, session_grace_ms / 1000),
       [](Settings &, const char *v) {
         long n = 0;
         std::string bad = number("session grace", v, 0, kGraceCapS, n);
         if (bad.empty())
           session_grace_ms = static_cast<int>(n * 1000);
         return bad;
       }},
      {"tls-cert", "F", true,
       "require TLS on every connection, with this certificate\n"
       "(PEM, chain after it) and --tls-key F (PEM)",
       [](Settings &s, const char *v) { return path(s.tls_cert, v); }},
      {"tls-key", "F", true, "the certificate's private key (PEM)",
       [](Settings &s, const char *v) { return path(s.tls_key, v); }},
      {"tls-ca", "F", true,
       "CA certificates that peer servers' certificates must\n"
       "chain to (default: the system's)",
       [](Settings &s, const char *v) { return path(s.tls_ca, v); }},
      {"ucx", "MODE", true,
       "auto, on or off: large migrations between servers over\n"
       "UCX (RDMA, shared memory, TCP); auto: where this host has\n"
       "an RDMA device (default auto)",
       [](Settings &, const char *v) {
         static const char *const names[] = {"auto", "on", "off"};
         for (int i = 0; i < 3; ++i)
           if (strcmp(v, names[i]) == 0) {
             ucx_mode = static_cast<UcxMode>(i);
             return std::string();
           }
         return fmt("unknown UCX mode '%s'", v);
       }},
      {"tls-allow-ucx", nullptr, true,
       "with TLS, still move large migrations over UCX, whose\n"
       "bytes are not encrypted (doc/security.md)",
       [](Settings &, const char *v) {
         tls_allow_ucx = strcmp(v, "true") == 0;
         return std::string();
       }},
      {"advertise", nullptr, true,
       fmt("advertise the command port by DNS-SD (mDNS) through\n"
           "avahi-daemon, as a %s service, for clients'\n"
           "POCL_REMOTE_DISCOVERY=avahi",
           POCL_REMOTE_DNSSD_TYPE),
       [](Settings &s, const char *v) {
         s.advertise = strcmp(v, "true") == 0;
         return std::string();
       }},
      {"advertise-name", "NAME", true,
       "the advertised service's name, 1 to 63 bytes\n"
       "(default \"pocld on HOST\"; taken: \"N #2\", ...)",
       [](Settings &s, const char *v) {
         size_t n = strlen(v);
         if (n == 0 || n > 63)
           return fmt("service name of %zu bytes (1 to 63)", n);
         for (const char *p = v; *p != '\0'; ++p)
           if (static_cast<unsigned char>(*p) < 0x20 || *p == 0x7f)
             return std::string("control character in the service name");
         s.advertise_name = v;
         return std::string();
       }},
      {"log-level", "L", true, "error, warn, info or debug (default info)",
       [](Settings &, const char *v) {
         static const char *const names[] = {"error", "warn", "info", "debug"};
         for (int i = 0; i < 4; ++i)
           if (strcmp(v, names[i]) == 0) {
             log_level = static_cast<Level>(i);
             return std::string();
           }
         return fmt("unknown log level '%s'", v);
       }},
      {"trace", "PREFIX", true,
       "write each session's command trace to PREFIX.<session>.json\n"
       "(Chrome trace events, doc/tracing.md; or env POCLD_TRACE)",
       [](Settings &, const char *v) {
         trace_prefix = v;
         return std::string();
       }},
      {"help", nullptr, false, "this text", nullptr},
  };
  return t;
}

const Option *find(const std::string &name)
{
  for (const Option &o : table())
    if (name == o.name)
      return &o;
  return nullptr;
}

void usage(FILE *out)
{
  fprintf(out, "usage: pocld [--config F] [OPTION]...\n"
               "Serves this host's OpenCL devices to PoCL-R clients, each "
               "session in a\nprocess of its own.  SIGHUP reloads the key and "
               "TLS files.\n");
  for (const Option &o : table()) {
    std::string head = std::string("--") + o.name;
    if (o.arg != nullptr)
      head += std::string(" ") + o.arg;
    fprintf(out, "  %-18s", head.c_str());
    bool first = true;
    for (const char *p = o.help.c_str(); *p != '\0'; first = false) {
      const char *nl = strchr(p, '\n');
      int n = int(nl ? nl - p : strlen(p));
      fprintf(out, "%*s%.*s\n", first ? 1 : 21, "", n, p);
      p += n + (nl ? 1 : 0);
    }
  }
  fprintf(out, "Boolean options take true or false in the configuration "
               "file ('key' alone: true).\n");
}

// A boolean's value: "true" or "false" (also in --name=V), "" if neither.
std::string boolean(const char *v)
{
  return strcmp(v, "true") == 0 || strcmp(v, "false") == 0 ? v : "";
}

std::string trim(const std::string &s)
{
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Sets o from v; on failure says so, after `where` (the option, or the
// file, line and key).
bool apply(Settings &s, const Option &o, const std::string &v,
           const std::string &where)
{
  std::string value = o.arg ? v : boolean(v.c_str());
  std::string bad;
  if (o.arg == nullptr && value.empty())
    bad = fmt("'%s' is not true or false", v.c_str());
  else
    bad = o.set(s, value.c_str());
  if (bad.empty())
    return true;
  fprintf(stderr, "pocld: %s: %s\n", where.c_str(), bad.c_str());
  return false;
}

// `key = value` lines, `#` comments (a whole line, or after a blank).
bool read_config(const std::string &file, bool must_exist, Settings &s)
{
  FILE *f = fopen(file.c_str(), "r");
  if (f == nullptr) {
    if (errno == ENOENT && !must_exist)
      return true;
    fprintf(stderr, "pocld: cannot read the configuration file %s: %s\n",
            file.c_str(), strerror(errno));
    return false;
  }
  std::map<std::string, int> seen; // key -> line
  char buf[kMaxLine + 2];
  bool ok = true;
  for (int line = 1; ok && fgets(buf, sizeof buf, f) != nullptr; ++line) {
    std::string where = file + ":" + std::to_string(line);
    std::string text = buf;
    if (text.size() > kMaxLine && text.back() != '\n') {
      fprintf(stderr, "pocld: %s: line longer than %zu bytes\n", where.c_str(),
              kMaxLine);
      ok = false;
      break;
    }
    if (!text.empty() && text.back() == '\n')
      text.pop_back();
    for (size_t h = text.find('#'); h != std::string::npos;
         h = text.find('#', h + 1))
      if (h == 0 || text[h - 1] == ' ' || text[h - 1] == '\t') {
        text.resize(h);
        break;
      }
    text = trim(text);
    if (text.empty())
      continue;
    size_t eq = text.find('=');
    std::string key = trim(text.substr(0, eq));
    const Option *o = find(key);
    if (o == nullptr || !o->in_file) {
      fprintf(stderr, "pocld: %s: %s '%s'\n", where.c_str(),
              o ? "not an option of the configuration file" : "unknown option",
              key.c_str());
      ok = false;
    } else if (seen.count(key) != 0) {
      fprintf(stderr, "pocld: %s: %s given again (first on line %d)\n",
              where.c_str(), key.c_str(), seen[key]);
      ok = false;
    } else if (eq == std::string::npos && o->arg != nullptr) {
      fprintf(stderr, "pocld: %s: %s needs '= value'\n", where.c_str(),
              key.c_str());
      ok = false;
    } else {
      seen[key] = line;
      ok = apply(s, *o,
                 eq == std::string::npos ? "true" : trim(text.substr(eq + 1)),
                 where + ": " + key);
    }
  }
  if (ok && ferror(f)) {
    fprintf(stderr, "pocld: cannot read the configuration file %s: %s\n",
            file.c_str(), strerror(errno));
    ok = false;
  }
  fclose(f);
  return ok;
}

} // namespace

Parsed parse_options(int argc, char **argv, Settings &s)
{
  s.port = POCL_REMOTE_DEFAULT_PORT;
  s.max_sessions = kDefaultSessions;
  // The whole command line first: --help and --config act before the rest,
  // and the rest is applied over the file.
  std::vector<std::pair<const Option *, std::string>> given;
  std::string config = POCLD_DEFAULT_CONFIG;
  bool config_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h")
      arg = "--help";
    size_t eq = arg.find('=');
    const Option *o =
        arg.compare(0, 2, "--") == 0 ? find(arg.substr(2, eq - 2)) : nullptr;
    if (o == nullptr) {
      fprintf(stderr, "pocld: unknown option '%s' (--help lists them)\n",
              argv[i]);
      return Parsed::Bad;
    }
    std::string value = "true";
    if (eq != std::string::npos)
      value = arg.substr(eq + 1);
    else if (o->arg != nullptr) {
      if (i + 1 >= argc) {
        fprintf(stderr, "pocld: --%s needs a value\n", o->name);
        return Parsed::Bad;
      }
      value = argv[++i];
    }
    if (strcmp(o->name, "help") == 0) {
      usage(stdout);
      return Parsed::Done;
    }
    if (strcmp(o->name, "config") == 0) {
      config = value;
      config_given = true;
    } else
      given.emplace_back(o, value);
  }
  if (!read_config(config, config_given, s))
    return Parsed::Bad;
  for (auto &g : given)
    if (!apply(s, *g.first, g.second, std::string("--") + g.first->name))
      return Parsed::Bad;
  return Parsed::Run;
}

} // namespace pocld
