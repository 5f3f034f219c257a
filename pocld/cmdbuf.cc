// cmdbuf.cc - command buffers (cl_khr_command_buffer) made once per client
// buffer: natively where the device has the extension in the version our
// headers declare, else emulated (pocld enqueues the stored commands itself
// on every CMDBUF_RUN).  Either way a run is one message and one completion.
#include "bounds.hh"
#include "run.hh"

#include "log.hh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace pocld {

namespace {

// 0.9.5 added a properties parameter to every recording call: a device of a
// later version is emulated rather than called with the wrong arguments.
constexpr cl_version kNativeMax = CL_MAKE_VERSION(0, 9, 4);

struct Size3 {
  size_t v[3];
  explicit Size3(const uint64_t in[3]) : v{in[0], in[1], in[2]} {}
};

template <class F> F ext(cl_platform_id p, const char *name)
{
  return reinterpret_cast<F>(clGetExtensionFunctionAddressForPlatform(p, name));
}

} // namespace

// The device's cl_khr_command_buffer entry points, where it has a version
// they match and simultaneous use (a run may be enqueued again while the
// last one's completion callback has not run yet).
bool Session::native_cmdbuf(const Device &d, NativeCmdBuf &n)
{
  // POCLD_CMDBUF=emulate: every device emulated (tests, comparisons).
  const char *mode = getenv("POCLD_CMDBUF");
  if (mode != nullptr && strcmp(mode, "emulate") == 0)
    return false;
  size_t sz = 0;
  if (clGetDeviceInfo(d.id, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, nullptr,
                      &sz) != CL_SUCCESS)
    return false;
  std::vector<cl_name_version> exts(sz / sizeof(cl_name_version));
  if (clGetDeviceInfo(d.id, CL_DEVICE_EXTENSIONS_WITH_VERSION, sz, exts.data(),
                      nullptr) != CL_SUCCESS)
    return false;
  auto it = std::find_if(exts.begin(), exts.end(), [](const cl_name_version &e) {
    return strcmp(e.name, "cl_khr_command_buffer") == 0;
  });
  if (it == exts.end() || it->version > kNativeMax)
    return false;
  cl_device_command_buffer_capabilities_khr caps = 0;
  if (clGetDeviceInfo(d.id, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR,
                      sizeof caps, &caps, nullptr) != CL_SUCCESS ||
      !(caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR))
    return false;
  cl_platform_id p = devs_.platforms[d.platform].id;
  n.create = ext<clCreateCommandBufferKHR_fn>(p, "clCreateCommandBufferKHR");
  n.finalize =
      ext<clFinalizeCommandBufferKHR_fn>(p, "clFinalizeCommandBufferKHR");
  n.release = ext<clReleaseCommandBufferKHR_fn>(p, "clReleaseCommandBufferKHR");
  n.enqueue = ext<clEnqueueCommandBufferKHR_fn>(p, "clEnqueueCommandBufferKHR");
  n.ndrange = ext<clCommandNDRangeKernelKHR_fn>(p, "clCommandNDRangeKernelKHR");
  n.copy = ext<clCommandCopyBufferKHR_fn>(p, "clCommandCopyBufferKHR");
  n.copy_rect =
      ext<clCommandCopyBufferRectKHR_fn>(p, "clCommandCopyBufferRectKHR");
  n.fill = ext<clCommandFillBufferKHR_fn>(p, "clCommandFillBufferKHR");
  n.barrier = ext<clCommandBarrierWithWaitListKHR_fn>(
      p, "clCommandBarrierWithWaitListKHR");
  return n.create && n.finalize && n.release && n.enqueue && n.ndrange &&
         n.copy && n.copy_rect && n.fill && n.barrier;
}

// The objects a command names, checked as its message's handler checks
// them.  CL_SUCCESS, or the error its message would complete with.
cl_int Session::cmdbuf_check(const Decoded &d, const Queue &q)
{
  const pocl_remote_mem_cmd &c = d.mem;
  auto same = [&](const Mem *m) {
    return m != nullptr && m->platform == q.platform;
  };
  switch (d.hdr.type) {
  case POCL_RMSG_NDRANGE: {
    auto k = kernels_.find(d.ndrange.kernel_id);
    if (k == kernels_.end())
      return CL_INVALID_KERNEL;
    if (d.ndrange.work_dim < 1 || d.ndrange.work_dim > 3)
      return CL_INVALID_WORK_DIMENSION;
    if (d.ndrange.num_args != k->second.args.size())
      return CL_INVALID_KERNEL_ARGS;
    for (const ArgView &a : d.args)
      if ((a.kind == POCL_REMOTE_ARG_BUFFER && !same(find_buffer(a.a))) ||
          (a.kind == POCL_REMOTE_ARG_IMAGE && !same(find_image(a.a))) ||
          (a.kind == POCL_REMOTE_ARG_SAMPLER && !samplers_.count(a.a)) ||
          a.kind == POCL_REMOTE_ARG_SVM)
        return CL_INVALID_ARG_VALUE;
    return CL_SUCCESS;
  }
  case POCL_RMSG_COPY:
  case POCL_RMSG_COPY_RECT: {
    Mem *src = find_buffer(c.src_id), *dst = find_buffer(c.dst_id);
    if (!same(src) || !same(dst))
      return CL_INVALID_MEM_OBJECT;
    if (d.hdr.type == POCL_RMSG_COPY)
      return in_bounds(*src, c.src_origin[0], c.region[0]) &&
                     in_bounds(*dst, c.dst_origin[0], c.region[0])
                 ? CL_SUCCESS
                 : CL_INVALID_VALUE;
    return rect_in_bounds(*src, c.src_origin, c.region, c.src_row_pitch,
                          c.src_slice_pitch) &&
                   rect_in_bounds(*dst, c.dst_origin, c.region,
                                  c.dst_row_pitch, c.dst_slice_pitch)
               ? CL_SUCCESS
               : CL_INVALID_VALUE;
  }
  case POCL_RMSG_FILL: {
    Mem *dst = find_buffer(c.dst_id);
    if (!same(dst))
      return CL_INVALID_MEM_OBJECT;
    return in_bounds(*dst, c.dst_origin[0], c.region[0]) ? CL_SUCCESS
                                                         : CL_INVALID_VALUE;
  }
  default: // MARKER: decode admits only these types
    return CL_SUCCESS;
  }
}

// Records the commands into a native command buffer.  The kernel arguments
// are set as for an NDRANGE and captured by the recording; the sub-buffers
// made for them live as long as the buffer.
cl_int Session::cmdbuf_record(CmdBuf &cb, Queue &q)
{
  NativeCmdBuf &n = cb.native;
  const Device &dev = devs_.devices[q.device];
  cl_command_buffer_properties_khr props[] = {
      CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
  cl_int err = CL_SUCCESS;
  cb.handle = n.create(1, &q.q, props, &err);
  if (cb.handle == nullptr)
    return err;
  std::vector<cl_sync_point_khr> points(cb.cmds.size());
  std::vector<cl_sync_point_khr> waits;
  for (size_t i = 0; i < cb.cmds.size() && err == CL_SUCCESS; ++i) {
    const Decoded &d = cb.cmds[i].d;
    waits.clear();
    for (uint32_t s : cb.cmds[i].syncs)
      waits.push_back(points[s]);
    const cl_uint nw = cl_uint(waits.size());
    const cl_sync_point_khr *w = nw ? waits.data() : nullptr;
    const pocl_remote_mem_cmd &c = d.mem;
    const Size3 so(c.src_origin), dor(c.dst_origin), rg(c.region);
    switch (d.hdr.type) {
    case POCL_RMSG_NDRANGE: {
      Kernel &k = kernels_.at(d.ndrange.kernel_id);
      err = set_args(k, dev, d.args);
      cb.subs.insert(cb.subs.end(), launch_subs_.begin(), launch_subs_.end());
      launch_subs_.clear();
      if (err != CL_SUCCESS)
        break;
      const pocl_remote_ndrange &r = d.ndrange;
      Size3 off(r.offset), gl(r.global), loc(r.local);
      bool has_local = loc.v[0] || loc.v[1] || loc.v[2];
      err = n.ndrange(cb.handle, nullptr, nullptr, k.k, r.work_dim, off.v,
                      gl.v, has_local ? loc.v : nullptr, nw, w, &points[i],
                      nullptr);
      break;
    }
    case POCL_RMSG_COPY:
      err = n.copy(cb.handle, nullptr, find_buffer(c.src_id)->buf,
                   find_buffer(c.dst_id)->buf, so.v[0], dor.v[0], rg.v[0], nw,
                   w, &points[i], nullptr);
      break;
    case POCL_RMSG_COPY_RECT:
      err = n.copy_rect(cb.handle, nullptr, find_buffer(c.src_id)->buf,
                        find_buffer(c.dst_id)->buf, so.v, dor.v, rg.v,
                        c.src_row_pitch, c.src_slice_pitch, c.dst_row_pitch,
                        c.dst_slice_pitch, nw, w, &points[i], nullptr);
      break;
    case POCL_RMSG_FILL:
      err = n.fill(cb.handle, nullptr, find_buffer(c.dst_id)->buf, d.data,
                   c.data_size, dor.v[0], rg.v[0], nw, w, &points[i], nullptr);
      break;
    default:
      err = n.barrier(cb.handle, nullptr, nw, w, &points[i], nullptr);
      break;
    }
  }
  if (err == CL_SUCCESS)
    err = n.finalize(cb.handle);
  return err;
}

void Session::cmdbuf_release(CmdBuf &cb)
{
  if (cb.handle != nullptr)
    cb.native.release(cb.handle);
  for (cl_mem m : cb.subs)
    clReleaseMemObject(m);
  cb.handle = nullptr;
  cb.subs.clear();
}

bool Session::cmdbuf_create(const Msg &m)
{
  auto c = load<pocl_remote_cmdbuf_create>(m.body);
  auto fail = [&](cl_int err) {
    reply(m.hdr.id, err);
    return true;
  };
  Queue *q = find_queue(c.queue_id);
  if (q == nullptr)
    return fail(CL_INVALID_COMMAND_QUEUE);
  if (cmdbufs_.count(c.cmdbuf_id))
    return fail(CL_INVALID_VALUE);
  CmdBuf cb;
  cb.bytes.assign(m.payload, m.payload + m.hdr.payload_size);
  DecodeError e;
  if (!decode_cmdbuf(cb.bytes.data(), cb.bytes.size(), c.num_commands, cb.cmds,
                     e)) {
    LOG_ERR(sid_, "%s", e.why);
    return false;
  }
  for (const CmdBufEntry &ce : cb.cmds)
    if (cl_int err = cmdbuf_check(ce.d, *q); err != CL_SUCCESS)
      return fail(err);
  uint32_t mode = POCL_REMOTE_CMDBUF_EMULATED;
  if (native_cmdbuf(devs_.devices[q->device], cb.native)) {
    cl_int err = cmdbuf_record(cb, *q);
    if (err == CL_SUCCESS)
      mode = POCL_REMOTE_CMDBUF_NATIVE;
    else {
      LOG_INFO(sid_, "native command buffer refused (%d), emulated", err);
      cmdbuf_release(cb);
    }
  }
  LOG_DEBUG(sid_, "command buffer %llu: %zu commands, %s",
            (unsigned long long)c.cmdbuf_id, cb.cmds.size(),
            mode == POCL_REMOTE_CMDBUF_NATIVE ? "native" : "emulated");
  // The entries' views point into cb.bytes, whose storage moves along.
  cmdbufs_.emplace(c.cmdbuf_id, std::move(cb));
  reply(m.hdr.id, CL_SUCCESS, &mode, sizeof mode);
  return true;
}

// Emulation: every command on q, behind the run's waits.  On an in-order
// queue the order is the queue's; otherwise events carry the sync points.
cl_int Session::cmdbuf_emulate(CmdBuf &cb, Queue &q, cl_uint n,
                               const cl_event *w, cl_event *ev)
{
  const Device &dev = devs_.devices[q.device];
  cl_command_queue_properties props = 0;
  clGetCommandQueueInfo(q.q, CL_QUEUE_PROPERTIES, sizeof props, &props,
                        nullptr);
  const bool ordered = !(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  std::vector<cl_event> evs(ordered ? 0 : cb.cmds.size(), nullptr);
  cl_event start = nullptr;
  cl_int err = CL_SUCCESS;
  if (n != 0 && !ordered)
    err = clEnqueueMarkerWithWaitList(q.q, n, w, &start);
  std::vector<cl_event> waits;
  for (size_t i = 0; i < cb.cmds.size() && err == CL_SUCCESS; ++i) {
    const Decoded &d = cb.cmds[i].d;
    waits.clear();
    if (ordered) {
      if (i == 0)
        waits.assign(w, w + n);
    } else {
      if (start != nullptr)
        waits.push_back(start);
      for (uint32_t s : cb.cmds[i].syncs)
        waits.push_back(evs[s]);
    }
    const cl_uint nw = cl_uint(waits.size());
    const cl_event *wl = nw ? waits.data() : nullptr;
    cl_event *out = ordered ? nullptr : &evs[i];
    const pocl_remote_mem_cmd &c = d.mem;
    const Size3 so(c.src_origin), dor(c.dst_origin), rg(c.region);
    Mem *src = find_buffer(c.src_id), *dst = find_buffer(c.dst_id);
    switch (d.hdr.type) {
    case POCL_RMSG_NDRANGE: {
      // The objects may have gone since the buffer was made (a client
      // that freed them): such a run fails.
      auto k = kernels_.find(d.ndrange.kernel_id);
      if (k == kernels_.end() || cmdbuf_check(d, q) != CL_SUCCESS) {
        err = CL_INVALID_KERNEL;
        break;
      }
      err = set_args(k->second, dev, d.args);
      if (err == CL_SUCCESS) {
        const pocl_remote_ndrange &r = d.ndrange;
        Size3 off(r.offset), gl(r.global), loc(r.local);
        bool has_local = loc.v[0] || loc.v[1] || loc.v[2];
        err = clEnqueueNDRangeKernel(q.q, k->second.k, r.work_dim, off.v,
                                     gl.v, has_local ? loc.v : nullptr, nw, wl,
                                     out);
      }
      for (cl_mem sub : launch_subs_)
        clReleaseMemObject(sub);
      launch_subs_.clear();
      break;
    }
    case POCL_RMSG_COPY:
    case POCL_RMSG_COPY_RECT:
      if (cmdbuf_check(d, q) != CL_SUCCESS)
        err = CL_INVALID_MEM_OBJECT;
      else if (d.hdr.type == POCL_RMSG_COPY)
        err = clEnqueueCopyBuffer(q.q, src->buf, dst->buf, so.v[0], dor.v[0],
                                  rg.v[0], nw, wl, out);
      else
        err = clEnqueueCopyBufferRect(q.q, src->buf, dst->buf, so.v, dor.v,
                                      rg.v, c.src_row_pitch, c.src_slice_pitch,
                                      c.dst_row_pitch, c.dst_slice_pitch, nw,
                                      wl, out);
      break;
    case POCL_RMSG_FILL:
      if (cmdbuf_check(d, q) != CL_SUCCESS)
        err = CL_INVALID_MEM_OBJECT;
      else
        err = clEnqueueFillBuffer(q.q, dst->buf, d.data, c.data_size, dor.v[0],
                                  rg.v[0], nw, wl, out);
      break;
    default:
      // A barrier without sync points waits for every command before it,
      // which an in-order queue does anyway.
      if (!ordered && cb.cmds[i].syncs.empty())
        for (size_t j = 0; j < i; ++j)
          waits.push_back(evs[j]);
      err = clEnqueueBarrierWithWaitList(q.q, cl_uint(waits.size()),
                                         waits.empty() ? nullptr : waits.data(),
                                         out);
      break;
    }
  }
  if (err == CL_SUCCESS) {
    if (ordered)
      err = clEnqueueMarkerWithWaitList(q.q, 0, nullptr, ev);
    else
      err = clEnqueueMarkerWithWaitList(q.q, cl_uint(evs.size()), evs.data(),
                                        ev);
  }
  for (cl_event e : evs)
    if (e != nullptr)
      clReleaseEvent(e);
  if (start != nullptr)
    clReleaseEvent(start);
  return err;
}

bool Session::cmdbuf_run(const Decoded &d)
{
  const pocl_remote_cmdbuf_run &r = d.cmdbuf_run;
  Queue *q = find_queue(r.cmd.queue_id);
  auto it = cmdbufs_.find(r.cmdbuf_id);
  if (q == nullptr || it == cmdbufs_.end()) {
    complete_now(d.hdr.id, q == nullptr ? CL_INVALID_COMMAND_QUEUE
                                        : CL_INVALID_COMMAND_BUFFER_KHR);
    return true;
  }
  CmdBuf &cb = it->second;
  return run(d.hdr.id, r.cmd, d.waits, *q, nullptr, Pending::Plain, nullptr,
             [&](cl_uint n, const cl_event *w, cl_event *ev) {
               if (cb.handle != nullptr) {
                 cl_command_queue qs[1] = {q->q};
                 return cb.native.enqueue(1, qs, cb.handle, n, w, ev);
               }
               return cmdbuf_emulate(cb, *q, n, w, ev);
             }) != Outcome::Protocol;
}

bool Session::cmdbuf_free(const Msg &m)
{
  uint64_t id = load<pocl_remote_release>(m.body).obj_id;
  auto it = cmdbufs_.find(id);
  if (it == cmdbufs_.end()) {
    LOG_WARN(sid_, "CMDBUF_FREE of unknown command buffer %llu",
             (unsigned long long)id);
    return true;
  }
  cmdbuf_release(it->second);
  cmdbufs_.erase(it);
  return true;
}

void Session::cmdbuf_release_all()
{
  for (auto &cb : cmdbufs_)
    cmdbuf_release(cb.second);
  cmdbufs_.clear();
}

} // namespace pocld
