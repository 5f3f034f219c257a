// session_objects.hh - what a session keeps of the OpenCL objects it made
// for its client (objects.cc, svm.cc) and of the host memory its transfers
// stage through (Staging::create in session.cc).
#pragma once

#include "cl.hh"
#include "decode.hh"
#include "usm.hh"

#include <atomic>
#include <cstdint>
#include <vector>

namespace pocld {

// Where a platform's staging may live in page-locked memory: a buffer of
// `ctx` made with CL_MEM_ALLOC_HOST_PTR and mapped on `q` for good.
struct Pinning {
  cl_context ctx;
  cl_command_queue q;
};

// Host copy of a command's data (read results, write sources).  The native
// command holds one reference; a write whose bytes come on the data socket
// holds a second one for the data reader, since a failed dependency can
// complete the command before the data reader is done.  The last unref
// frees it.
struct Staging {
  std::atomic<int> refs;
  uint64_t size;
  uint64_t capacity; // bytes at `bytes`
  uint8_t *bytes;    // after the header, or the mapping of `pinned`
  cl_mem pinned = nullptr;
  Pinning pin{nullptr, nullptr}; // pinned's (both retained)
  uint8_t *data() { return bytes; }
  // pin: page-locked memory of that context if possible (Session::pinning
  // gives one for writes of kStagingLarge and more, read_pinning for reads
  // of any size).
  static Staging *create(uint64_t size, int refs, const Pinning *pin = nullptr);
  void unref();
};

struct Queue {
  cl_command_queue q;
  uint32_t device, platform;
  int64_t ts_offset; // device timer + ts_offset = server CLOCK_REALTIME ns
  bool dirty;        // enqueued to since the last clFlush
  // Commands may go without a native event (see Session::run): any
  // in-order queue.
  bool elide = false;
  // Commands enqueued without an event and not yet covered (oldest first).
  std::vector<struct Pending *> untracked;
  // Event ids of MIGRATE_INs that later commands must wait for behind a
  // marker not enqueued yet (Completions::order_gates).
  std::vector<uint64_t> gates;
};

struct Mem {
  cl_mem m;
  // The buffer that buffer commands use: m itself for buffers, the backing
  // buffer of a 1D buffer image (clients move its contents with plain buffer
  // commands), nullptr for other images.
  cl_mem buf;
  uint32_t pixel_size; // 0 for buffers
  uint64_t size;       // CL_MEM_SIZE of buf; 0 for other images
  uint64_t serial;     // never reused: kernel argument caches compare it
  // Images: pixels along each axis of a transfer's region (array images:
  // the array is the last axis).  Transfers are checked against it.
  uint64_t extent[3] = {0, 0, 0};
  uint64_t svm = 0; // a buffer on SVM memory: the allocation's address
  // Where it was made: a COPY between objects of two platforms goes
  // through host memory (staged_copy.cc).
  uint32_t device = 0, platform = 0;
};

struct Program {
  cl_program p;
};

// Last value given to one kernel argument, to skip redundant clSetKernelArg.
struct ArgCache {
  // The argument takes plain bytes.  Only those get SCALAR values: bytes
  // given to a buffer, image or sampler argument would be taken for an
  // object handle by the native runtime.
  bool scalar = false;
  uint32_t kind = UINT32_MAX; // POCL_REMOTE_ARG_*, UINT32_MAX: unknown
  uint64_t a = 0, b = 0;      // size / object serial / offset
  std::vector<uint8_t> bytes; // scalar value
};

struct Kernel {
  cl_kernel k;
  std::vector<ArgCache> args; // one per argument
  uint64_t svm_gen = 0; // Session::svm_gen_ when its SVM pointers were set
  // The largest 1D work-group Session::local_size picks on a GPU (0: not
  // asked yet), and its last choice.
  size_t wg_cap = 0, wg_multiple = 0;
  size_t last_global = 0, last_local = 0;
};

// svm.cc: a fine-grained NDRANGE's staging (Session::svm_stage) holds
// 4 * size + this; svm_changes sets `out` to what its COMPLETION carries.
constexpr uint64_t kSvmChangesSlack = 64;
uint64_t svm_changes(Staging &st, const uint8_t *&out);

// clEnqueueSVMMemcpy, or USM's memcpy where one side is a native USM
// allocation with these functions (`usm`); non-blocking.
cl_int svm_copy(const UsmFns *usm, cl_command_queue cq, void *dst,
                const void *src, size_t n, cl_uint nw, const cl_event *w,
                cl_event *ev);

// A native SVM allocation; the client knows it by `address` (its key in
// Session::svm_), the first page boundary in it, and uses `span` bytes.
struct SvmAlloc {
  void *native;
  cl_context ctx;
  uint64_t span;
  // A native USM allocation's functions (usm.hh), else nullptr: made with
  // clSVMAlloc, for SVM or for USM served on SVM.
  const UsmFns *usm = nullptr;
  uint32_t device = 0, platform = 0; // Devices' indexes
  // Buffers made on it: a free waits for the last one (`freed`).
  uint32_t buffers = 0;
  bool freed = false;
};

struct Sampler {
  cl_sampler s;
  uint64_t serial;
};

// A device's cl_khr_command_buffer entry points (cmdbuf.cc).
struct NativeCmdBuf {
  clCreateCommandBufferKHR_fn create = nullptr;
  clFinalizeCommandBufferKHR_fn finalize = nullptr;
  clReleaseCommandBufferKHR_fn release = nullptr;
  clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  clCommandNDRangeKernelKHR_fn ndrange = nullptr;
  clCommandCopyBufferKHR_fn copy = nullptr;
  clCommandCopyBufferRectKHR_fn copy_rect = nullptr;
  clCommandFillBufferKHR_fn fill = nullptr;
  clCommandBarrierWithWaitListKHR_fn barrier = nullptr;
};

// A client's command buffer: its commands as received (the views of cmds
// point into bytes), and the native buffer recorded from them, or none
// (emulated).
struct CmdBuf {
  std::vector<uint8_t> bytes;
  std::vector<CmdBufEntry> cmds;
  NativeCmdBuf native;
  cl_command_buffer_khr handle = nullptr;
  std::vector<cl_mem> subs; // sub-buffers of its kernels' arguments
};

} // namespace pocld
