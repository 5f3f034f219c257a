// includes.cc - included files of a build, on this server's disk while it
// builds.
#include "includes.hh"

#include "decode.hh"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <ftw.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace pocld {

namespace {

bool write_file(const std::string &path, const char *p, size_t n)
{
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
                                  O_CLOEXEC,
                0600);
  if (fd < 0)
    return false;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      close(fd);
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return close(fd) == 0;
}

// Creates the directories of `rel` (a checked "k/a/b/file") under root.
bool make_parents(const std::string &root, const std::string &rel)
{
  for (size_t i = rel.find('/'); i != std::string::npos;
       i = rel.find('/', i + 1)) {
    std::string dir = root + "/" + rel.substr(0, i);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return false;
  }
  return true;
}

int remove_one(const char *path, const struct stat *, int, struct FTW *)
{
  return remove(path);
}

// Whether the file at `path` holds exactly these n bytes.
bool same_content(const std::string &path, const char *p, size_t n)
{
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st;
  bool same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              static_cast<uint64_t>(st.st_size) == n;
  char buf[16384];
  while (same && n > 0) {
    ssize_t r = read(fd, buf, std::min(n, sizeof buf));
    if (r < 0 && errno == EINTR)
      continue;
    same = r > 0 && std::memcmp(buf, p, static_cast<size_t>(r)) == 0;
    if (same) {
      p += r;
      n -= static_cast<size_t>(r);
    }
  }
  close(fd);
  return same;
}

bool is_dir(const std::string &path)
{
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The -I directories of the options, split as the client splits them
// (lib/CL/devices/remote/remote_includes.c): "-I dir" and "-Idir" between
// spaces, at most kMaxDirs - 1.  Empty when one does not exist here: the
// client numbers only those that exist there, so the numbers would not
// match.
constexpr size_t kMaxDirs = 64;
std::vector<std::string> option_dirs(const std::string &options, bool &all)
{
  std::vector<std::string> dirs;
  all = true;
  size_t i = 0;
  auto token = [&]() {
    while (i < options.size() && options[i] == ' ')
      ++i;
    size_t b = i;
    while (i < options.size() && options[i] != ' ')
      ++i;
    return options.substr(b, i - b);
  };
  for (std::string tok = token(); !tok.empty(); tok = token()) {
    std::string dir;
    if (tok == "-I")
      dir = token();
    else if (tok.compare(0, 2, "-I") == 0)
      dir = tok.substr(2);
    else
      continue;
    if (dir.empty() || dirs.size() + 1 >= kMaxDirs)
      continue;
    if (!is_dir(dir))
      all = false;
    dirs.push_back(dir);
  }
  return dirs;
}

} // namespace

// Where client and server share the files (one machine, or the same
// installation on both), the build goes as the client's own would: same
// options, same paths, and so the same entry of a caching compiler's
// cache (PoCL's) as a build on the client's device.  Only when every file
// k/path (k >= 1: the k-th -I directory) is found here at that directory
// with the same bytes, and neither the working directory nor an earlier
// directory has a file of that name that would be found first.
bool IncludeDir::found_in_place(
    const std::string &options,
    const std::vector<std::pair<const char *, size_t>> &names,
    const std::vector<std::pair<const char *, size_t>> &data)
{
  bool all = false;
  std::vector<std::string> dirs = option_dirs(options, all);
  if (!all)
    return false;
  struct stat st;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string name(names[i].first, names[i].second);
    size_t slash = name.find('/');
    unsigned long k = std::strtoul(name.c_str(), nullptr, 10);
    if (slash == std::string::npos || k == 0 || k > dirs.size())
      return false;
    std::string rel = name.substr(slash + 1);
    if (stat(rel.c_str(), &st) == 0)
      return false;
    for (unsigned long j = 1; j < k; ++j)
      if (stat((dirs[j - 1] + "/" + rel).c_str(), &st) == 0)
        return false;
    if (!same_content(dirs[k - 1] + "/" + rel, data[i].first, data[i].second))
      return false;
  }
  return true;
}

// The directory is named after the files' content, so that a build of the
// same source and files gets the same options, which a caching compiler
// (PoCL's kernel cache) then finds again.
IncludeDir::IncludeDir(
    const std::string &options,
    const std::vector<std::pair<const char *, size_t>> &names,
    const std::vector<std::pair<const char *, size_t>> &data)
{
  if (names.empty() || found_in_place(options, names, data))
    return;
  uint64_t h = kFnvBasis;
  for (size_t i = 0; i < names.size(); ++i) {
    h = fnv1a(names[i].first, names[i].second, h);
    h = fnv1a(data[i].first, data[i].second, h);
  }
  const char *tmp = getenv("TMPDIR");
  std::string base = tmp != nullptr && *tmp == '/' &&
                             std::string(tmp).find_first_of(" \t\"'") ==
                                 std::string::npos
                         ? tmp
                         : "/tmp";
  char name[64];
  snprintf(name, sizeof name, "/pocld-includes-%d-%016llx",
           static_cast<int>(getpid()), static_cast<unsigned long long>(h));
  root_ = base + name;
  if (mkdir(root_.c_str(), 0700) != 0) {
    ok_ = false;
    root_.clear();
    return;
  }
  std::set<unsigned> dirs;
  for (size_t i = 0; i < names.size() && ok_; ++i) {
    std::string rel(names[i].first, names[i].second);
    dirs.insert(static_cast<unsigned>(std::strtoul(rel.c_str(), nullptr, 10)));
    ok_ = make_parents(root_, rel) &&
          write_file(root_ + "/" + rel, data[i].first, data[i].second);
  }
  for (unsigned k : dirs)
    options_ += "-I" + root_ + "/" + std::to_string(k) + " ";
}

IncludeDir::~IncludeDir()
{
  if (!root_.empty())
    nftw(root_.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

} // namespace pocld
