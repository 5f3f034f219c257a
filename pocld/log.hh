// log.hh - one-line log messages on stderr.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace pocld {

enum class Level { Error = 0, Warn = 1, Info = 2, Debug = 3 };

// Set once by main before any thread starts; read-only afterwards.
inline Level log_level = Level::Info;

inline bool log_enabled(Level l) { return l <= log_level; }

// Lines start with their syslog priority ("<3>"), which journald reads as
// the level (journalctl -p warning).  Set by main, before any fork.
inline bool log_priority_prefix = false;

// Sets log_priority_prefix when stderr is the journal: systemd names its
// stream in $JOURNAL_STREAM ("device:inode").
inline void log_to_journal_if_there()
{
  const char *e = getenv("JOURNAL_STREAM");
  unsigned long long dev = 0, ino = 0;
  struct stat st;
  log_priority_prefix =
      e != nullptr && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
      fstat(STDERR_FILENO, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

// sid: the session's short hex id, or "-" outside a session.  The line is
// formatted first and written with one write(2) so that lines of different
// threads never interleave.
__attribute__((format(printf, 3, 4))) inline void
log_line(Level l, const char *sid, const char *fmt, ...)
{
  static const char *const prefix[] = {"error", "warn", "info", "debug"};
  static const char *const priority[] = {"<3>", "<4>", "<6>", "<7>"};
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "%spocld %s [%s] ",
                   log_priority_prefix ? priority[static_cast<int>(l)] : "",
                   prefix[static_cast<int>(l)], sid);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  va_end(ap);
  size_t len = n + (m < 0 ? 0 : m);
  if (len > sizeof buf - 2)
    len = sizeof buf - 2;
  buf[len++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, buf, len);
  (void)ignored;
}

} // namespace pocld

// Macros so that the arguments of disabled levels are never evaluated.
#define POCLD_LOG(level, sid, ...)                                             \
  do {                                                                         \
    if (::pocld::log_enabled(level))                                           \
      ::pocld::log_line(level, sid, __VA_ARGS__);                              \
  } while (0)
#define LOG_ERR(sid, ...) POCLD_LOG(::pocld::Level::Error, sid, __VA_ARGS__)
#define LOG_WARN(sid, ...) POCLD_LOG(::pocld::Level::Warn, sid, __VA_ARGS__)
#define LOG_INFO(sid, ...) POCLD_LOG(::pocld::Level::Info, sid, __VA_ARGS__)
#define LOG_DEBUG(sid, ...) POCLD_LOG(::pocld::Level::Debug, sid, __VA_ARGS__)
