// svm.cc - shared virtual memory and unified shared memory (doc/
// protocol.md, "SVM" and "Unified shared memory"): the session's native
// SVM and USM allocations, at whose addresses the client maps its host
// copies (or reserves the range, for USM device allocations), and the
// commands on them.  Every address from the client is checked against the
// allocations before use.
#include "bounds.hh"
#include "run.hh"

#include "log.hh"

#include <unistd.h>

namespace pocld {

namespace {

constexpr cl_svm_mem_flags kSvmFlags = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY |
                                       CL_MEM_READ_ONLY |
                                       CL_MEM_SVM_FINE_GRAIN_BUFFER;
constexpr cl_mem_alloc_flags_intel kUsmFlags =
    CL_MEM_ALLOC_WRITE_COMBINED_INTEL |
    CL_MEM_ALLOC_INITIAL_PLACEMENT_DEVICE_INTEL |
    CL_MEM_ALLOC_INITIAL_PLACEMENT_HOST_INTEL;

uint64_t page_size()
{
  static const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  return page;
}

uint64_t page_round(uint64_t n)
{
  return (n + page_size() - 1) & ~(page_size() - 1);
}

} // namespace

// The native allocation of `kind` for `size` bytes in ctx: USM's where
// the device has it natively, else SVM's (USM served on SVM; the client
// keeps host and shared allocations coherent as fine-grained SVM, doc/
// protocol.md).  nullptr and err set on failure.
static void *alloc_native(cl_context ctx, cl_platform_id platform,
                          cl_device_id dev, const pocl_remote_svm_alloc &c,
                          uint64_t size, const UsmFns *&usm, cl_int &err)
{
  usm = c.kind == POCL_REMOTE_ALLOC_SVM ? nullptr
                                        : native_usm(platform, dev, c.kind);
  if (usm == nullptr) {
    cl_svm_mem_flags flags =
        c.kind == POCL_REMOTE_ALLOC_SVM ? c.flags : CL_MEM_READ_WRITE;
    return clSVMAlloc(ctx, flags, size, 0);
  }
  const cl_mem_properties_intel props[] = {CL_MEM_ALLOC_FLAGS_INTEL, c.flags,
                                           0};
  const cl_mem_properties_intel *pp = c.flags ? props : nullptr;
  switch (c.kind) {
  case POCL_REMOTE_ALLOC_USM_HOST:
    return usm->host(ctx, pp, size, 0, &err);
  case POCL_REMOTE_ALLOC_USM_DEVICE:
    return usm->device(ctx, dev, pp, size, 0, &err);
  default:
    return usm->shared(ctx, dev, pp, size, 0, &err);
  }
}

static void free_native(const SvmAlloc &a)
{
  if (a.usm)
    a.usm->free(a.ctx, a.native);
  else
    clSVMFree(a.ctx, a.native);
}

// The native allocation has a page more than the client's whole pages, so
// that they start at a page boundary whatever alignment the runtime gives:
// no other allocation shares them, and the client can map them.
bool Session::svm_alloc(const Msg &m)
{
  auto c = load<pocl_remote_svm_alloc>(m.body);
  cl_int err = CL_SUCCESS;
  cl_device_svm_capabilities caps = 0;
  const bool usm_kind = c.kind != POCL_REMOTE_ALLOC_SVM;
  const Device *dev =
      c.device < devs_.devices.size() ? &devs_.devices[c.device] : nullptr;
  const cl_platform_id platform =
      dev ? devs_.platforms[dev->platform].id : nullptr;
  if (dev == nullptr)
    err = CL_INVALID_DEVICE;
  else if (c.kind > POCL_REMOTE_ALLOC_USM_SHARED)
    err = CL_INVALID_VALUE;
  else if ((c.flags & ~(usm_kind ? kUsmFlags : kSvmFlags)) != 0)
    err = CL_INVALID_VALUE;
  else if (c.size == 0 || c.size > dev->max_alloc ||
           c.size > (uint64_t{1} << 48))
    err = CL_INVALID_BUFFER_SIZE;
  else if ((!usm_kind || !native_usm(platform, dev->id, c.kind)) &&
           (clGetDeviceInfo(dev->id, CL_DEVICE_SVM_CAPABILITIES, sizeof caps,
                            &caps, nullptr) != CL_SUCCESS ||
            !(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) ||
            ((c.flags & CL_MEM_SVM_FINE_GRAIN_BUFFER) && !usm_kind &&
             !(caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER))))
    err = CL_INVALID_OPERATION;
  uint64_t address = 0;
  if (err == CL_SUCCESS) {
    cl_context ctx = context(dev->platform, err);
    const uint64_t span = page_round(c.size);
    const UsmFns *usm = nullptr;
    void *p = ctx ? alloc_native(ctx, platform, dev->id, c,
                                 span + page_size(), usm, err)
                  : nullptr;
    if (p == nullptr) {
      if (err == CL_SUCCESS)
        err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    } else {
      address = page_round(uint64_t(uintptr_t(p)));
      SvmAlloc a{p, ctx, span};
      a.usm = usm;
      a.device = c.device;
      a.platform = dev->platform;
      svm_.emplace(address, a);
      ++svm_gen_;
      LOG_DEBUG(sid_, "%s allocation (kind %u) of %llu bytes at %#llx",
                usm ? "native USM" : "SVM", unsigned(c.kind),
                (unsigned long long)c.size, (unsigned long long)address);
    }
  }
  reply(m.hdr.id, err, err == CL_SUCCESS ? &address : nullptr,
        err == CL_SUCCESS ? sizeof address : 0);
  return true;
}

bool Session::svm_free(const Msg &m)
{
  uint64_t address = load<pocl_remote_release>(m.body).obj_id;
  auto it = svm_.find(address);
  if (it == svm_.end() || it->second.freed) {
    LOG_WARN(sid_, "SVM free of unknown address %#llx ignored",
             (unsigned long long)address);
    return true;
  }
  if (it->second.freed)
    return true;
  it->second.freed = true;
  // No longer found by addresses; kept while buffers use its memory.
  if (it->second.buffers == 0) {
    free_native(it->second);
    svm_.erase(it);
  }
  ++svm_gen_;
  return true;
}

// The host's pages of a device allocation (the client's remote_usm_host.c):
// copied at once on the session's transfer queue, so that what the client
// sends next sees them.
cl_int Session::svm_host_copy(const pocl_remote_svm_sync &r, void *dst,
                              const void *src)
{
  if (r.size == 0 || svm_find(r.address, r.size) == nullptr)
    return CL_INVALID_VALUE;
  const SvmAlloc &a = (--svm_.upper_bound(r.address))->second;
  Queue q{nullptr, a.device, a.platform, 0, false};
  cl_int err = CL_SUCCESS;
  cl_command_queue tq = transfer_queue(q, err);
  cl_event ev = nullptr;
  if (tq != nullptr)
    err = svm_copy(a.usm, tq, dst, src, r.size, 0, nullptr, &ev);
  if (ev != nullptr) {
    if (err == CL_SUCCESS)
      err = clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
  }
  return tq == nullptr && err == CL_SUCCESS ? CL_OUT_OF_RESOURCES : err;
}

// A buffer read into, or written from, a USM device allocation of a CPU
// device, whose client copy the host reaches by faults (the client cannot
// take the bytes into such memory itself): its runtime addresses the
// allocation directly.
bool Session::svm_host_transfer(const Decoded &d, Queue &q)
{
  const pocl_remote_mem_cmd &c = d.mem;
  const bool rd = d.hdr.type == POCL_RMSG_READ;
  const uint64_t n = c.region[0], at = rd ? c.dst_id : c.src_id;
  const uint64_t off = rd ? c.src_origin[0] : c.dst_origin[0];
  Mem *buf = (rd || d.hdr.type == POCL_RMSG_WRITE)
                 ? find_buffer(rd ? c.src_id : c.dst_id)
                 : nullptr;
  void *p = n != 0 ? svm_find(at, n) : nullptr;
  const bool cpu =
      p != nullptr &&
      devs_.devices[(--svm_.upper_bound(at))->second.device].cpu;
  if (buf == nullptr || !cpu ||
      c.data_size != 0 || !in_bounds(*buf, off, n)) {
    LOG_ERR(sid_,
            "buffer transfer %llu of %llu bytes at %#llx: no CPU device's "
            "SVM allocation there",
            (unsigned long long)d.hdr.id, (unsigned long long)n,
            (unsigned long long)at);
    complete_now(d.hdr.id, CL_INVALID_VALUE);
    return true;
  }
  const cl_command_queue cq = q.q;
  return run(d.hdr.id, c.cmd, d.waits, q, nullptr, Pending::Plain, nullptr,
             [&](cl_uint nw, const cl_event *w, cl_event *ev) {
               return rd ? clEnqueueReadBuffer(cq, buf->buf, CL_FALSE, off, n,
                                               p, nw, w, ev)
                         : clEnqueueWriteBuffer(cq, buf->buf, CL_FALSE, off,
                                                n, p, nw, w, ev);
             }) != Outcome::Protocol;
}

bool Session::svm_read(const Msg &m)
{
  auto r = load<pocl_remote_svm_sync>(m.body);
  cl_int err = CL_INVALID_VALUE;
  std::vector<uint8_t> bytes;
  if (r.size <= POCL_REMOTE_MAX_PAYLOAD &&
      svm_find(r.address, r.size) != nullptr) {
    bytes.resize(r.size);
    err = svm_host_copy(r, bytes.data(),
                        reinterpret_cast<void *>(uintptr_t(r.address)));
  }
  if (err != CL_SUCCESS)
    LOG_ERR(sid_, "host read of %llu bytes at %#llx refused (%d)",
            (unsigned long long)r.size, (unsigned long long)r.address, err);
  reply(m.hdr.id, err, err == CL_SUCCESS ? bytes.data() : nullptr,
        err == CL_SUCCESS ? bytes.size() : 0);
  return true;
}

bool Session::svm_write(const Msg &m)
{
  auto r = load<pocl_remote_svm_sync>(m.body);
  cl_int err =
      r.size == m.hdr.payload_size
          ? svm_host_copy(r, reinterpret_cast<void *>(uintptr_t(r.address)),
                          m.payload)
          : CL_INVALID_VALUE;
  if (err != CL_SUCCESS)
    LOG_ERR(sid_, "host write of %llu bytes at %#llx refused (%d)",
            (unsigned long long)r.size, (unsigned long long)r.address, err);
  return true;
}

uint64_t Session::svm_buffer(uint64_t address, uint64_t size)
{
  if (svm_find(address, size) == nullptr)
    return 0;
  auto it = --svm_.upper_bound(address);
  ++it->second.buffers;
  return it->first;
}

void Session::svm_unbuffer(uint64_t key)
{
  auto it = svm_.find(key);
  if (it == svm_.end() || --it->second.buffers != 0 || !it->second.freed)
    return;
  free_native(it->second);
  svm_.erase(it);
}

void Session::svm_release_all()
{
  for (auto &a : svm_)
    free_native(a.second);
  svm_.clear();
}

void *Session::svm_find(uint64_t address, uint64_t size)
{
  auto it = svm_.upper_bound(address);
  if (it == svm_.begin())
    return nullptr;
  --it;
  uint64_t off = address - it->first;
  if (it->second.freed || off >= it->second.span ||
      size > it->second.span - off)
    return nullptr;
  return reinterpret_cast<void *>(uintptr_t(address));
}

bool Session::svm_arg_ok(uint32_t i, uint64_t address)
{
  if (svm_find(address, 1) != nullptr)
    return true;
  LOG_ERR(sid_, "kernel argument %u: %#llx is in no SVM allocation", i,
          (unsigned long long)address);
  return false;
}

const UsmFns *Session::svm_usm(uint64_t address)
{
  auto it = svm_.upper_bound(address);
  if (it == svm_.begin())
    return nullptr;
  --it;
  return address - it->first < it->second.span ? it->second.usm : nullptr;
}

cl_int svm_copy(const UsmFns *usm, cl_command_queue cq, void *dst,
                const void *src, size_t n, cl_uint nw, const cl_event *w,
                cl_event *ev)
{
  return usm ? usm->memcpy(cq, CL_FALSE, dst, src, n, nw, w, ev)
             : clEnqueueSVMMemcpy(cq, CL_FALSE, dst, src, n, nw, w, ev);
}

// Kernels may follow pointers stored in SVM memory to any allocation of
// the session, which some runtimes must be told of (NVIDIA's, coarse-
// grained).  Set again only after allocations came or went.
cl_int Session::svm_exec_info(Kernel &k)
{
  std::vector<void *> ptrs, usm;
  ptrs.reserve(svm_.size());
  for (auto &a : svm_)
    if (!a.second.freed)
      (a.second.usm ? usm : ptrs).push_back(a.second.native);
  cl_int err = CL_SUCCESS;
  if (!ptrs.empty())
    err = clSetKernelExecInfo(k.k, CL_KERNEL_EXEC_INFO_SVM_PTRS,
                              ptrs.size() * sizeof(void *), ptrs.data());
  // Native USM: pointers stored in USM memory may lead to any allocation
  // of any kind (the client's indirect-access settings are not sent).
  const cl_bool yes = CL_TRUE;
  for (cl_kernel_exec_info indirect :
       {CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL,
        CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL,
        CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL})
    if (err == CL_SUCCESS && !usm.empty())
      err = clSetKernelExecInfo(k.k, indirect, sizeof yes, &yes);
  if (err == CL_SUCCESS && !usm.empty())
    err = clSetKernelExecInfo(k.k, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL,
                              usm.size() * sizeof(void *), usm.data());
  if (err == CL_SUCCESS)
    k.svm_gen = svm_gen_;
  return err;
}

bool Session::svm_mem_command(const Decoded &d, Queue &q)
{
  const pocl_remote_mem_cmd &c = d.mem;
  const uint32_t type = d.hdr.type;
  const uint64_t id = d.hdr.id, n = c.region[0];
  const cl_command_queue cq = q.q;
  void *src = nullptr, *dst = nullptr;
  bool ok = n != 0 && c.src_origin[0] == 0 && c.dst_origin[0] == 0;
  if (type == POCL_RMSG_READ || type == POCL_RMSG_COPY)
    ok = ok && (src = svm_find(c.src_id, n)) != nullptr;
  if (type == POCL_RMSG_COPY || type == POCL_RMSG_FILL)
    ok = ok && (dst = svm_find(c.dst_id, n)) != nullptr;
  else if (type != POCL_RMSG_READ)
    ok = false; // WRITE: Session::mem_command
  if (type == POCL_RMSG_FILL)
    ok = ok && n % c.data_size == 0 && c.dst_id % c.data_size == 0;
  if (!ok) {
    LOG_ERR(sid_,
            "SVM command %llu (type %u): %llu bytes at %#llx/%#llx "
            "outside the session's SVM allocations",
            (unsigned long long)id, type, (unsigned long long)n,
            (unsigned long long)c.src_id, (unsigned long long)c.dst_id);
    complete_now(id, CL_INVALID_VALUE);
    return true;
  }
  const UsmFns *usm = svm_usm(c.src_id);
  if (usm == nullptr && type != POCL_RMSG_READ)
    usm = svm_usm(c.dst_id);
  switch (type) {
  case POCL_RMSG_READ: {
    Staging *st = Staging::create(n, 1, pinning(q, n));
    if (st == nullptr) {
      complete_now(id, CL_OUT_OF_HOST_MEMORY);
      return true;
    }
    st->size = n;
    return run(id, c.cmd, d.waits, q, st, Pending::Read, nullptr,
               [&](cl_uint nw, const cl_event *w, cl_event *ev) {
                 return svm_copy(usm, cq, st->data(), src, n, nw, w, ev);
               }) != Outcome::Protocol;
  }
  case POCL_RMSG_COPY:
    return run(id, c.cmd, d.waits, q, nullptr, Pending::Plain, nullptr,
               [&](cl_uint nw, const cl_event *w, cl_event *ev) {
                 return svm_copy(usm, cq, dst, src, n, nw, w, ev);
               }) != Outcome::Protocol;
  case POCL_RMSG_FILL:
    return run(id, c.cmd, d.waits, q, nullptr, Pending::Plain, nullptr,
               [&](cl_uint nw, const cl_event *w, cl_event *ev) {
                 return usm ? usm->fill(cq, dst, d.data, c.data_size, n, nw,
                                        w, ev)
                            : clEnqueueSVMMemFill(cq, dst, d.data, c.data_size,
                                                  n, nw, w, ev);
               }) != Outcome::Protocol;
  default:
    LOG_ERR(sid_, "message type %u refused on SVM", type);
    return false;
  }
}

// Fine-grained SVM around a kernel.  The staging holds the regions' bytes
// as written before it (the twin), then as read back after it, then room
// for what changed (svm_changes): only that goes back, so the host's own
// writes to other bytes of the regions meanwhile stand.
cl_int Session::svm_stage(const Decoded &d, Staging *&st)
{
  for (uint64_t i = 0; i < d.svm_count; ++i) {
    pocl_remote_svm_sync r;
    memcpy(&r, d.svm_regions + i * sizeof r, sizeof r);
    if (svm_find(r.address, r.size) == nullptr) {
      LOG_ERR(sid_,
              "NDRANGE: SVM region of %llu bytes at %#llx is in no "
              "allocation",
              (unsigned long long)r.size, (unsigned long long)r.address);
      return CL_INVALID_VALUE;
    }
  }
  const uint64_t n = d.data_len;
  st = Staging::create(4 * n + kSvmChangesSlack, 1);
  if (st == nullptr)
    return CL_OUT_OF_HOST_MEMORY;
  st->size = n;
  memcpy(st->data(), d.data, n);
  return CL_SUCCESS;
}

// Runs of changed bytes as {offset, length} and the bytes, closer runs
// than a header merged, then {0, 0}: at most 2 * size + kSvmChangesSlack.
uint64_t svm_changes(Staging &st, const uint8_t *&out)
{
  const uint64_t n = st.size;
  const uint8_t *twin = st.data(), *now = twin + n;
  uint8_t *o = st.data() + 2 * n, *start = o;
  uint64_t i = 0;
  while (i < n) {
    if (twin[i] == now[i]) {
      ++i;
      continue;
    }
    uint64_t end = i + 1, same = 0;
    for (uint64_t j = end; j < n && same < 16; ++j) {
      if (twin[j] != now[j]) {
        end = j + 1;
        same = 0;
      } else
        ++same;
    }
    const uint64_t hdr[2] = {i, end - i};
    memcpy(o, hdr, sizeof hdr);
    memcpy(o + sizeof hdr, now + i, end - i);
    o += sizeof hdr + (end - i);
    i = end;
  }
  const uint64_t last[2] = {0, 0};
  memcpy(o, last, sizeof last);
  o += sizeof last;
  out = start;
  return uint64_t(o - start);
}

cl_int Session::svm_around(
    cl_command_queue cq, const Decoded &d, Staging *st, cl_uint n,
    const cl_event *w, cl_event *ev,
    const std::function<cl_int(cl_uint, const cl_event *, cl_event *)> &kernel)
{
  // Each step waits for the previous one (the queue may be out of order).
  std::vector<cl_event> prev(w, w + n);
  cl_int err = CL_SUCCESS;
  auto step = [&](auto enqueue) {
    cl_event e = nullptr;
    if (err == CL_SUCCESS)
      err = enqueue(cl_uint(prev.size()), prev.empty() ? nullptr : prev.data(),
                    &e);
    if (err != CL_SUCCESS)
      return;
    if (prev.size() == 1 && prev[0] != (n ? w[0] : nullptr))
      clReleaseEvent(prev[0]);
    prev.assign(1, e);
  };
  auto each = [&](bool to_device) {
    uint64_t off = 0;
    for (uint64_t i = 0; i < d.svm_count; ++i) {
      pocl_remote_svm_sync r;
      memcpy(&r, d.svm_regions + i * sizeof r, sizeof r);
      void *p = reinterpret_cast<void *>(uintptr_t(r.address));
      uint8_t *h = st->data() + off + (to_device ? 0 : d.data_len);
      const UsmFns *usm = svm_usm(r.address);
      step([&](cl_uint nw, const cl_event *ww, cl_event *e) {
        return to_device ? svm_copy(usm, cq, p, h, r.size, nw, ww, e)
                         : svm_copy(usm, cq, h, p, r.size, nw, ww, e);
      });
      off += r.size;
    }
  };
  each(true);
  step(kernel);
  each(false);
  if (err != CL_SUCCESS) {
    // What was enqueued uses the staging, which the failure frees.
    if (prev.size() == 1 && prev[0] != (n ? w[0] : nullptr)) {
      clWaitForEvents(1, &prev[0]);
      clReleaseEvent(prev[0]);
    }
    return err;
  }
  *ev = prev[0];
  return CL_SUCCESS;
}

} // namespace pocld
