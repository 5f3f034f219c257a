// includes.cc - included files of a build, on this server's disk while it
// builds.
#include "includes.hh"

#include "decode.hh"

#include <cerrno>
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

} // namespace

// The directory is named after the files' content, so that a build of the
// same source and files gets the same options, which a caching compiler
// (PoCL's kernel cache) then finds again.
IncludeDir::IncludeDir(
    const std::vector<std::pair<const char *, size_t>> &names,
    const std::vector<std::pair<const char *, size_t>> &data)
{
  if (names.empty())
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
