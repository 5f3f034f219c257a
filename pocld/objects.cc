// objects.cc - synchronous requests: device info, queues, memory objects,
// samplers, FINISH and releases.
#include "session.hh"

#include "log.hh"
#include "pocl_remote_pixel.h"

#include <algorithm>

namespace pocld {

namespace {

constexpr cl_mem_flags kHostAccessFlags =
    CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS;
constexpr cl_mem_flags kAccessFlags = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY |
                                      CL_MEM_READ_ONLY | kHostAccessFlags;

// The native object gets the device access flags only: the client's runtime
// enforces host access on the application's calls, and its driver must still
// read and write any object to migrate it (a HOST_READ_ONLY buffer's initial
// contents, a HOST_WRITE_ONLY one's for a map), which the native runtime
// would refuse.
cl_mem_flags native_flags(uint64_t flags) { return flags & ~kHostAccessFlags; }

template <class T> T body(const Msg &m) { return load<T>(m.body); }

} // namespace

Queue *Session::find_queue(uint64_t id)
{
  auto it = queues_.find(id);
  return it == queues_.end() ? nullptr : &it->second;
}

Mem *Session::find_buffer(uint64_t id)
{
  auto it = mems_.find(id);
  return it == mems_.end() || it->second.buf == nullptr ? nullptr : &it->second;
}

Mem *Session::find_image(uint64_t id)
{
  auto it = mems_.find(id);
  return it == mems_.end() || it->second.pixel_size == 0 ? nullptr
                                                         : &it->second;
}

cl_context Session::context(uint32_t platform, cl_int &err)
{
  err = CL_SUCCESS;
  if (contexts_[platform] != nullptr)
    return contexts_[platform];
  // One context per platform holding all its devices, so that objects of
  // one device can be used with queues of its siblings.
  const Platform &p = devs_.platforms[platform];
  cl_context_properties props[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(p.id), 0};
  contexts_[platform] =
      clCreateContext(props, static_cast<cl_uint>(p.devices.size()),
                      p.devices.data(), nullptr, nullptr, &err);
  return contexts_[platform];
}

// The offset that turns the device's profiling timer into server
// CLOCK_REALTIME nanoseconds, measured once per queue.
int64_t Session::timer_offset(const Device &d, cl_command_queue q)
{
  cl_ulong dev_ts = 0, host_ts = 0;
  uint64_t before = realtime_ns();
  if (d.host_timer &&
      clGetDeviceAndHostTimer(d.id, &dev_ts, &host_ts) == CL_SUCCESS) {
    uint64_t after = realtime_ns();
    return int64_t(before / 2 + after / 2 - dev_ts);
  }
  // Otherwise calibrate with a marker: implementations take its QUEUED
  // stamp on the host, in the device timer's domain, inside the enqueue
  // call that we bracket with realtime reads.
  cl_event ev = nullptr;
  before = realtime_ns();
  cl_int err = clEnqueueMarkerWithWaitList(q, 0, nullptr, &ev);
  uint64_t after = realtime_ns();
  if (err == CL_SUCCESS) {
    err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED,
                                    sizeof dev_ts, &dev_ts, nullptr);
    clReleaseEvent(ev);
    if (err == CL_SUCCESS && dev_ts != 0)
      return int64_t(before / 2 + after / 2 - dev_ts);
  }
  // Last resort: assume the device timer counts CLOCK_MONOTONIC.
  LOG_WARN(sid_,
           "cannot calibrate the timer of device %s (%d), assuming "
           "CLOCK_MONOTONIC",
           d.name.c_str(), err);
  return int64_t(realtime_ns() - monotonic_ns());
}

bool Session::device_info(const Msg &m)
{
  auto c = body<pocl_remote_device_info>(m);
  if (c.device >= devs_.devices.size()) {
    reply(m.hdr.id, CL_INVALID_DEVICE);
    return true;
  }
  if (c.param != 0) {
    std::vector<uint8_t> one = one_info_entry(devs_.devices[c.device].id,
                                              c.param);
    reply(m.hdr.id, CL_SUCCESS, one.data(), one.size());
    return true;
  }
  const std::vector<uint8_t> &info = devs_.devices[c.device].info;
  reply(m.hdr.id, CL_SUCCESS, info.data(), info.size());
  return true;
}

bool Session::create_queue(const Msg &m)
{
  auto c = body<pocl_remote_create_queue>(m);
  const cl_command_queue_properties ooo =
      CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
  // Other bits are the client runtime's own business (PoCL marks its
  // internal queues with CL_QUEUE_HIDDEN); the native queue never sees them.
  c.properties &= ooo | CL_QUEUE_PROFILING_ENABLE;
  cl_int err = CL_SUCCESS;
  if (c.device >= devs_.devices.size())
    err = CL_INVALID_DEVICE;
  else if (queues_.count(c.queue_id))
    err = CL_INVALID_VALUE;
  if (err != CL_SUCCESS) {
    reply(m.hdr.id, err);
    return true;
  }
  const Device &d = devs_.devices[c.device];
  cl_context ctx = context(d.platform, err);
  cl_command_queue q = nullptr;
  if (ctx != nullptr)
    q = clCreateCommandQueue(ctx, d.id, c.properties, &err);
  if (q == nullptr && ctx != nullptr && (c.properties & ooo)) {
    // Commands carry explicit wait lists, so in-order is merely slower.
    LOG_INFO(sid_,
             "device %u rejects out-of-order queues (%d), using "
             "in-order",
             c.device, err);
    q = clCreateCommandQueue(ctx, d.id, c.properties & ~ooo, &err);
  }
  if (q == nullptr) {
    reply(m.hdr.id, err);
    return true;
  }
  int64_t offset =
      (c.properties & CL_QUEUE_PROFILING_ENABLE) ? timer_offset(d, q) : 0;
  Queue &nq = queues_[c.queue_id];
  nq.q = q;
  nq.device = c.device;
  nq.platform = d.platform;
  nq.ts_offset = offset;
  nq.dirty = false;
  // Covered commands are reported by their cover's waiter or callback (on
  // a platform that fails commands silently, or by sweep_failed).
  nq.elide = !(c.properties & ooo);
  LOG_DEBUG(sid_, "queue %llu on device %u", (unsigned long long)c.queue_id,
            c.device);
  reply(m.hdr.id, CL_SUCCESS);
  return true;
}

bool Session::create_buffer(const Msg &m)
{
  auto c = body<pocl_remote_create_buffer>(m);
  cl_int err = CL_SUCCESS;
  if (c.device >= devs_.devices.size())
    err = CL_INVALID_DEVICE;
  else if (c.flags & ~(kAccessFlags | CL_MEM_USE_HOST_PTR))
    err = CL_INVALID_VALUE;
  else if (c.size == 0 || c.size > devs_.devices[c.device].max_alloc)
    err = CL_INVALID_BUFFER_SIZE;
  else if (mems_.count(c.mem_id))
    err = CL_INVALID_VALUE;
  // A buffer on SVM memory: the runtime's own aliasing of the allocation.
  const bool on_svm = c.flags & CL_MEM_USE_HOST_PTR;
  void *svm = nullptr;
  if (err == CL_SUCCESS && on_svm != (m.hdr.payload_size == 8))
    err = CL_INVALID_VALUE;
  else if (err == CL_SUCCESS && on_svm) {
    uint64_t address;
    memcpy(&address, m.payload, 8);
    if ((svm = svm_find(address, c.size)) == nullptr) {
      LOG_ERR(sid_, "buffer %llu on SVM %#llx: no such allocation",
              (unsigned long long)c.mem_id, (unsigned long long)address);
      err = CL_INVALID_HOST_PTR;
    }
  }
  cl_mem mem = nullptr;
  if (err == CL_SUCCESS) {
    uint32_t platform = devs_.devices[c.device].platform;
    cl_context ctx = context(platform, err);
    if (ctx != nullptr)
      mem = clCreateBuffer(ctx, native_flags(c.flags), c.size, svm, &err);
    if (mem != nullptr) {
      Mem &nm =
          mems_.emplace(c.mem_id, Mem{mem, mem, 0, c.size, next_serial_++})
              .first->second;
      nm.device = c.device;
      nm.platform = platform;
      if (svm != nullptr)
        nm.svm = svm_buffer(uint64_t(uintptr_t(svm)), c.size);
    }
  }
  reply(m.hdr.id, err);
  return true;
}

bool Session::create_image(const Msg &m)
{
  auto c = body<pocl_remote_create_image>(m);
  cl_int err = CL_SUCCESS;
  cl_image_desc desc{};
  desc.image_type = c.image_type;
  desc.image_width = c.width;
  desc.image_height = c.height;
  desc.image_depth = c.depth;
  desc.image_array_size = c.array_size;
  desc.image_row_pitch = c.row_pitch;
  desc.image_slice_pitch = c.slice_pitch;
  desc.num_mip_levels = c.num_mip_levels;
  desc.num_samples = c.num_samples;
  if (c.device >= devs_.devices.size())
    err = CL_INVALID_DEVICE;
  else if (c.flags & ~kAccessFlags)
    err = CL_INVALID_VALUE;
  else if (mems_.count(c.mem_id))
    err = CL_INVALID_VALUE;
  Mem *backing = nullptr;
  if (err == CL_SUCCESS && c.image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER) {
    backing = find_buffer(c.buffer_id);
    if (backing == nullptr)
      err = CL_INVALID_IMAGE_DESCRIPTOR;
    else
      desc.buffer = backing->buf;
  }
  // Image data on the wire is sized with this pixel size (the client's).
  const uint32_t pixel =
      pocl_remote_pixel_size(c.channel_order, c.channel_type);
  if (err == CL_SUCCESS && pixel == 0)
    err = CL_IMAGE_FORMAT_NOT_SUPPORTED;
  cl_mem mem = nullptr;
  if (err == CL_SUCCESS) {
    cl_context ctx = context(devs_.devices[c.device].platform, err);
    cl_image_format fmt{c.channel_order, c.channel_type};
    if (ctx != nullptr)
      mem = clCreateImage(ctx, native_flags(c.flags), &fmt, &desc, nullptr,
                          &err);
  }
  if (mem != nullptr) {
    // The native runtime packs host data with its own element size.
    size_t native = 0;
    clGetImageInfo(mem, CL_IMAGE_ELEMENT_SIZE, sizeof native, &native,
                   nullptr);
    if (native != pixel) {
      LOG_ERR(sid_,
              "image format %#x/%#x: the device's pixel is %zu bytes, "
              "OpenCL's %u; refused",
              c.channel_order, c.channel_type, native, pixel);
      clReleaseMemObject(mem);
      err = CL_IMAGE_FORMAT_NOT_SUPPORTED;
    } else if (backing != nullptr) {
      clRetainMemObject(backing->buf);
      mems_.emplace(c.mem_id,
                    Mem{mem, backing->buf, pixel, backing->size,
                        next_serial_++});
    } else
      mems_.emplace(c.mem_id,
                    Mem{mem, nullptr, pixel, 0, next_serial_++});
  }
  if (err == CL_SUCCESS) {
    // The image exists, so its type and sizes are valid.
    const bool arr1 = c.image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
    const bool arr2 = c.image_type == CL_MEM_OBJECT_IMAGE2D_ARRAY;
    const bool two = arr2 || c.image_type == CL_MEM_OBJECT_IMAGE2D ||
                     c.image_type == CL_MEM_OBJECT_IMAGE3D;
    Mem &nm = mems_.at(c.mem_id);
    nm.device = c.device;
    nm.platform = devs_.devices[c.device].platform;
    uint64_t *x = nm.extent;
    x[0] = c.width;
    x[1] = arr1 ? c.array_size : two ? c.height : 1;
    x[2] = arr2 ? c.array_size
                : c.image_type == CL_MEM_OBJECT_IMAGE3D ? c.depth : 1;
  }
  reply(m.hdr.id, err);
  return true;
}

bool Session::create_sampler(const Msg &m)
{
  auto c = body<pocl_remote_create_sampler>(m);
  cl_int err = CL_SUCCESS;
  if (c.device >= devs_.devices.size())
    err = CL_INVALID_DEVICE;
  else if (samplers_.count(c.sampler_id))
    err = CL_INVALID_VALUE;
  if (err == CL_SUCCESS) {
    cl_context ctx = context(devs_.devices[c.device].platform, err);
    cl_sampler s = nullptr;
    if (ctx != nullptr)
      s = clCreateSampler(ctx, c.normalized_coords ? CL_TRUE : CL_FALSE,
                          c.addressing_mode, c.filter_mode, &err);
    if (s != nullptr)
      samplers_.emplace(c.sampler_id, Sampler{s, next_serial_++});
  }
  reply(m.hdr.id, err);
  return true;
}

// Answered from a marker's callback rather than with a blocking clFinish:
// the reader must stay free to receive the NOTIFY_EVENTs that the queue's
// commands may be waiting for.
bool Session::finish(const Msg &m)
{
  auto c = body<pocl_remote_release>(m);
  Queue *q = find_queue(c.obj_id);
  if (q == nullptr) {
    reply(m.hdr.id, CL_INVALID_COMMAND_QUEUE);
    return true;
  }
  order_gates(*q);
  cl_event ev = nullptr;
  cl_int err = clEnqueueMarkerWithWaitList(q->q, 0, nullptr, &ev);
  Pending *p = new Pending{};
  p->owner = &completions_;
  p->id = m.hdr.id;
  p->platform = q->platform;
  p->set_kind(Pending::Finish);
  launch(p, err, ev, *q);
  return true;
}

// A trace's clock sample (doc/tracing.md).
bool Session::clock(const Msg &m)
{
  pocl_remote_clock c{trace_now()};
  reply(m.hdr.id, CL_SUCCESS, &c, sizeof c);
  return true;
}

void Session::release_mem(Mem &mem)
{
  if (mem.buf != nullptr && mem.buf != mem.m)
    clReleaseMemObject(mem.buf);
  clReleaseMemObject(mem.m);
  if (mem.svm != 0) // after the buffer: its memory may go now
    svm_unbuffer(mem.svm);
}

bool Session::free_object(const Msg &m)
{
  uint64_t id = body<pocl_remote_release>(m).obj_id;
  bool found = false;
  switch (m.hdr.type) {
  case POCL_RMSG_FREE_QUEUE:
    if (auto it = queues_.find(id); it != queues_.end()) {
      dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), &it->second),
                   dirty_.end());
      // The client frees a queue once all its commands completed, but the
      // runtime may still be tearing them down: Intel's OpenCL CPU runtime
      // then destroys the queue in its own worker thread, which waits for
      // itself (test_events over it hung so).  As an application does:
      // finish, then release.
      clFinish(it->second.q);
      clReleaseCommandQueue(it->second.q);
      queues_.erase(it);
      found = true;
    }
    break;
  case POCL_RMSG_FREE_BUFFER:
    if (auto it = mems_.find(id); it != mems_.end()) {
      release_mem(it->second);
      mems_.erase(it);
      found = true;
    }
    break;
  case POCL_RMSG_FREE_PROGRAM:
    if (auto it = programs_.find(id); it != programs_.end()) {
      clReleaseProgram(it->second.p);
      programs_.erase(it);
      found = true;
    }
    break;
  case POCL_RMSG_FREE_KERNEL:
    if (auto it = kernels_.find(id); it != kernels_.end()) {
      clReleaseKernel(it->second.k);
      kernels_.erase(it);
      found = true;
    }
    break;
  case POCL_RMSG_FREE_SAMPLER:
    if (auto it = samplers_.find(id); it != samplers_.end()) {
      clReleaseSampler(it->second.s);
      samplers_.erase(it);
      found = true;
    }
    break;
  }
  if (!found)
    LOG_WARN(sid_, "release of unknown object %llu (message type %u) ignored",
             (unsigned long long)id, m.hdr.type);
  return true;
}

} // namespace pocld
