// built_programs.hh - the programs a session built from source, so that a
// build of the same source with the same options on the same device gets the
// native program built before instead of compiling it again.
//
// Clients build one source many times: the CTS builds the same kernel for
// every case of a test, and libraries build theirs for every context or
// queue they make.  PoCL's own drivers have a kernel cache, but other vendors'
// runtimes (Intel's OpenCL CPU runtime) compile every build.  A client cannot
// tell a shared program from a new one: the build log, status, binaries and
// kernels are those of the same build, each client program holds its own
// reference, and kernels are created per client kernel.  Only programs
// without program-scope variables are shared (those variables would be one
// storage for what the client sees as two programs), and only sources whose
// result depends on nothing but their text and options (doc/protocol.md,
// BUILD_PROGRAM).
#pragma once

#include "cl.hh"

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pocld {

class BuiltPrograms {
public:
  BuiltPrograms() = default;
  BuiltPrograms(const BuiltPrograms &) = delete;
  BuiltPrograms &operator=(const BuiltPrograms &) = delete;
  ~BuiltPrograms() { clear(); }

  // Whether a build of this source may be shared at all: it reads no file
  // and no clock (no include, import, __FILE__, __DATE__ or __TIME__).
  static bool shareable_source(const uint8_t *src, size_t len);

  // The key of a build's inputs, made once per build for find and keep.
  static std::string key(uint32_t device, const uint8_t *opts, size_t opts_len,
                         const uint8_t *src, size_t src_len);

  // The program built before from these inputs, with its reply, or nullptr.
  // The caller retains the program for itself.
  struct Entry {
    cl_program program;
    std::vector<uint8_t> reply; // the BUILD_PROGRAM reply's body
  };
  const Entry *find(const std::string &key);

  // Keeps a successful build that find did not have (retaining `p`),
  // unless it has program-scope variables; `cl_2` tells whether the device
  // may have them at all.
  void keep(std::string key, cl_program p, cl_device_id dev, bool cl_2,
            const std::vector<uint8_t> &reply);

  // Releases every kept program (before the session's contexts go).
  void clear();

  // Bounds on what is kept, the least recently used going first.
  static constexpr size_t kMaxEntries = 256;
  static constexpr size_t kMaxBytes = 32u << 20; // keys and replies

private:
  struct Slot {
    std::string key;
    Entry entry;
  };
  void drop_last();
  std::list<Slot> lru_; // most recently used first
  // Views of the slots' keys (list nodes do not move).
  std::unordered_map<std::string_view, std::list<Slot>::iterator> index_;
  size_t bytes_ = 0;
};

} // namespace pocld
