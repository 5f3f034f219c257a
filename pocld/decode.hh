// decode.hh - the checks and the decoding of what a client sends: pure
// functions of the received bytes (no sockets, no OpenCL, no session state),
// so that the fuzz target (tests/remote/fuzz/fuzz_decode.cc) runs exactly
// pocld's code.  What depends on the session (object ids, object sizes,
// pixel sizes) is left to the handlers.
#pragma once

#include "wire.hh"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace pocld {

// Why a message was refused; logged before its connection is closed.
struct DecodeError {
  char why[200] = "";
  // Sets `why`; returns false, for `return e.fail(...)`.
  __attribute__((format(printf, 2, 3))) bool fail(const char *fmt, ...);
};

// The largest payload a client may attach to a command-socket message of
// this type, or -1 if the type is not accepted on the command socket.
int64_t max_command_payload(uint32_t type);

// A command-socket header: a client-to-server type, that type's body size,
// a payload within the type's limit.  Checked before the body and payload
// are read, so before anything is allocated for them.
bool check_command_header(const pocl_remote_hdr &h, DecodeError &e);
// A data-socket header: DATA, no body.  Its payload size is checked against
// the WRITE* it belongs to.
bool check_data_header(const pocl_remote_hdr &h, DecodeError &e);
// A peer-connection header: PEER_NOTIFY (no payload) or PEER_DATA, with
// their body sizes.  PEER_DATA's payload size is checked against the
// MIGRATE_IN it belongs to.
bool check_peer_header(const pocl_remote_hdr &h, DecodeError &e);

// A command's wait list; every entry's origin is known.
struct WaitList {
  const uint8_t *raw = nullptr;
  uint32_t count = 0;
  pocl_remote_wait operator[](uint32_t i) const
  {
    return load<pocl_remote_wait>(raw + uint64_t{i} * sizeof(pocl_remote_wait));
  }
};

// One NDRANGE argument: a known kind; a SCALAR's `a` bytes at `value`.
struct ArgView {
  uint32_t kind;
  uint64_t a, b;
  const uint8_t *value;
};

// A decoded message.  Pointers point into the message's body and payload,
// which must outlive it.  One object is reused from message to message, so
// that its vectors keep their capacity.
struct Decoded {
  pocl_remote_hdr hdr{};
  const uint8_t *body = nullptr;
  // NDRANGE, memory commands, MARKER.
  pocl_remote_cmd cmd{};
  WaitList waits;
  pocl_remote_ndrange ndrange{};
  std::vector<ArgView> args;
  // NDRANGE with POCL_RCMD_SVM: svm_count pocl_remote_svm_sync regions
  // (unaligned), their bytes in `data`.
  const uint8_t *svm_regions = nullptr;
  uint64_t svm_count = 0;
  pocl_remote_mem_cmd mem{};
  pocl_remote_migrate migrate{}; // PUSH, MIGRATE_IN
  pocl_remote_cmdbuf_run cmdbuf_run{}; // CMDBUF_RUN
  // What follows the wait list (WRITE* inline bytes, FILL pattern,
  // FILL_IMAGE color), CREATE_KERNEL's name, BUILD_PROGRAM's source or
  // binary, CONNECT_PEER's host.
  const uint8_t *data = nullptr;
  uint64_t data_len = 0;
  // BUILD_PROGRAM: options (build.options_len bytes), then COMPILE's
  // embedded headers (name, source) or LINK's input program ids.
  pocl_remote_build_program build{};
  const uint8_t *options = nullptr;
  std::vector<std::pair<const char *, size_t>> header_names, header_srcs;
  // SOURCE and COMPILE: included files, "k/path" and their bytes; every
  // path relative, without empty, "." or ".." components.
  std::vector<std::pair<const char *, size_t>> file_names, file_data;
  std::vector<uint64_t> link_inputs;
  // IL and IL_COMPILE: the specialization constants to set, each of 1, 2, 4
  // or 8 bytes.
  std::vector<pocl_remote_spec_const> spec_consts;
};

// Decodes a message whose header passed check_command_header and whose body
// (hdr.body_size bytes) and payload (hdr.payload_size bytes) are complete:
// the payload layout of its type, every count, length and enum in it.
// False, with the reason in `e`, when the message is malformed.
bool decode(const pocl_remote_hdr &hdr, const uint8_t *body,
            const uint8_t *payload, Decoded &d, DecodeError &e);

// One command of a CMDBUF_CREATE: the message it would be (d, decoded as
// that message; its pointers into the CMDBUF_CREATE's payload) and the
// indices of the earlier commands it waits for.
struct CmdBufEntry {
  Decoded d;
  std::vector<uint32_t> syncs;
};

// The num_commands entries of a CMDBUF_CREATE's payload, exactly: each of a
// type a command buffer may hold, with no wait list, decoded as its own
// message is, and waiting only for earlier entries.
bool decode_cmdbuf(const uint8_t *payload, uint64_t size,
                   uint32_t num_commands, std::vector<CmdBufEntry> &out,
                   DecodeError &e);

// An included file's name in BUILD_PROGRAM: "k/path", k a directory
// number, path relative and inside it (no empty, "." or ".." component).
bool include_path_ok(const char *p, size_t n);

// FNV-1a 64 of n bytes, continuing from `h` (start: kFnvBasis).
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;
uint64_t fnv1a(const void *p, size_t n, uint64_t h = kFnvBasis);

// A binary a client sends for BUILD_PROGRAM BINARY or LOAD: one this
// server's device `device_key` made (behind a pocl_remote_binary_header,
// checksum intact), whose native bytes go to *native, or SPIR or SPIR-V,
// which go as they are.  False, with the reason in `e`, for anything else:
// a vendor library is never handed a binary of another platform or device.
bool check_binary(const uint8_t *b, uint64_t n, uint64_t device_key,
                  const uint8_t **native, uint64_t *native_len,
                  DecodeError &e);

} // namespace pocld
