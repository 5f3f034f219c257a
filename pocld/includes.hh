// includes.hh - the files a client's source includes from its own include
// directories (BUILD_PROGRAM num_files), written where this server's
// compiler finds them for the one build that brought them.
#pragma once

#include "cl.hh"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace pocld {

class IncludeDir {
public:
  // Writes the files ("k/path", checked by decode) under a directory of
  // this process, unless this server has them all where the client found
  // them (the k-th -I of `options`); ok() tells whether that worked.
  IncludeDir(const std::string &options,
             const std::vector<std::pair<const char *, size_t>> &names,
             const std::vector<std::pair<const char *, size_t>> &data);
  // Removes the directory and everything in it.
  ~IncludeDir();
  IncludeDir(const IncludeDir &) = delete;
  IncludeDir &operator=(const IncludeDir &) = delete;
  bool ok() const { return ok_; }
  // "-I <dir>/k " for every directory number k the files name, in order:
  // the client's search order (its working directory, then its -I).
  const std::string &options() const { return options_; }

private:
  static bool
  found_in_place(const std::string &options,
                 const std::vector<std::pair<const char *, size_t>> &names,
                 const std::vector<std::pair<const char *, size_t>> &data);
  std::string root_, options_;
  bool ok_ = true;
};

} // namespace pocld
