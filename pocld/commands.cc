// commands.cc - the command reader (its loop and dispatch to the handlers of
// the message table) and the enqueued commands: kernels, buffer and image
// transfers, markers and barriers.
#include "bounds.hh"
#include "run.hh"

#include "log.hh"

#include <algorithm>
#include <system_error>
#include <thread>

namespace pocld {

namespace {

struct Size3 {
  size_t v[3];
  explicit Size3(const uint64_t in[3]) : v{in[0], in[1], in[2]} {}
};

} // namespace

bool Session::run_commands()
{
  MsgReader reader(client_.command_link(), sid_);
  Msg m;
  // Whatever ends the loop, no command may stay without an event or cover.
  struct CoverAtExit {
    Session *s;
    ~CoverAtExit() { s->cover_trailing(); }
  } cover_at_exit{this};
  for (;;) {
    // Native commands are flushed in batches, right before the reader
    // would block: one clFlush per burst instead of one per command.
    if (!dirty_.empty() && !reader.has_message())
      flush_dirty();
    MsgReader::Status st = reader.next(m);
    if (st == MsgReader::Status::Closed)
      return true;
    if (st != MsgReader::Status::Ok)
      return false;
    next_ndrange_queue_ = reader.next_ndrange_queue();
    next_sole_wait_ = reader.next_ndrange_sole_wait();
    if (m.hdr.type == POCL_RMSG_BYE) {
      LOG_INFO(sid_, "the client said goodbye");
      if (write_busy_)
        wait_write(); // its bytes came before the BYE
      return false;
    }
    if (m.hdr.type == POCL_RMSG_ACK ? !client_.ack(m) : !dispatch(m)) {
      LOG_ERR(sid_,
              "protocol violation in message type %u id %llu, "
              "closing the session",
              m.hdr.type, (unsigned long long)m.hdr.id);
      return false;
    }
    if (trailing_ != nullptr && next_ndrange_queue_ != trailing_id_)
      cover_trailing();
    if (m.hdr.type == POCL_RMSG_ACK)
      continue;
    client_.command_seen(m.hdr.payload_size);
  }
}

bool Session::dispatch(const Msg &m)
{
  DecodeError e;
  if (!decode(m.hdr, m.body, m.payload, in_, e)) {
    LOG_ERR(sid_, "%s", e.why);
    return false;
  }
  POCLD_TRACE_MSG(Recv, m.hdr.type, m.hdr.id, m.body, m.hdr.payload_size, 0);
  // Behind a data-socket write that the data reader is still enqueueing,
  // only what cannot need it goes on (write.cc).
  if (__builtin_expect(write_busy_, 0) && !overtakes_write(in_))
    wait_write();
  // The table's session handler of each type (protocol/wire/
  // pocl_remote_messages.def); decode admitted only those the command
  // socket takes.
  switch (m.hdr.type) {
#define POCL_RMSG(name, number, body_size, where, limit, handler)               \
  case POCL_RMSG_##name:                                                       \
    return handle(&Session::handler, m);
#include "pocl_remote_messages.def"
#undef POCL_RMSG
  default:
    return false;
  }
}

bool Session::fail_write(uint64_t id, const pocl_remote_cmd &c, uint64_t size,
                         cl_int err)
{
  // The client sends the bytes regardless; they must be consumed in order.
  if (c.flags & POCL_RCMD_DATA_ON_DATA_SOCKET) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      data_slots_.push_back(DataSlot{id, size, nullptr});
    }
    data_cv_.notify_all();
  }
  complete_now(id, err);
  return true;
}

// A WRITE*: the bytes are inline (copied out of the reader's buffer, which
// the next message reuses) or come on the data socket.  Those are not
// waited for natively behind a user event (NVIDIA's OpenCL ran such a write
// about 18 ms after the event was set, see migrate_in): the data reader
// enqueues the write as they come (hand_over, write.cc), in parts when
// in_parts (buffers; each part waits on the one before), else in one piece
// once all are in.  enqueue (a WriteEnqueue, capturing by value: it runs
// on the data reader) writes bytes [offset, offset + len) of the data.
template <class F>
bool Session::run_write(uint64_t id, const pocl_remote_cmd &c,
                        const WaitList &waits, Queue &q,
                        const uint8_t *inline_data, uint64_t size,
                        bool in_parts, F enqueue)
{
  const bool on_data = c.flags & POCL_RCMD_DATA_ON_DATA_SOCKET;
  Staging *st = Staging::create(size, on_data ? 2 : 1, pinning(q, size));
  if (st == nullptr)
    return fail_write(id, c, size, CL_OUT_OF_HOST_MEMORY);
  if (!on_data) {
    memcpy(st->data(), inline_data, size);
    return run(id, c, waits, q, st, Pending::Plain, nullptr,
               [&](cl_uint n, const cl_event *w, cl_event *ev) {
                 return enqueue(st->data(), 0, size, n, w, ev);
               }) != Outcome::Protocol;
  }
  cl_int err = CL_SUCCESS;
  order_gates(q);
  Pending *p = open_cmd(id, waits, q, c.queue_id, err);
  if (p == nullptr) {
    st->unref();
    st->unref();
    // The data reader takes the bytes regardless, and drops them.
    return err != kProtocolError && fail_write(id, c, size, err);
  }
  p->staging = st;
  p->flags = c.flags;
  hand_over(p, q, size, in_parts, std::move(enqueue));
  return true;
}

// A large READ: read in parts, each after the one before, and sent part
// by part as READ_DATA by a thread of its own (send_read) as the reads
// finish, so that the device's read of one part overlaps the sending of the
// one before.  With a content size, its value is read first.
bool Session::read_stream(const Decoded &d, Queue &q, Mem &src, Mem *size)
{
  const pocl_remote_mem_cmd &c = d.mem;
  const uint64_t id = d.hdr.id, n = c.data_size;
  Staging *st = Staging::create(n + (size ? 8 : 0), 1,
                                read_pinning(d.waits, d.mem.cmd.queue_id, q));
  if (st == nullptr) {
    complete_now(id, CL_OUT_OF_HOST_MEMORY);
    return true;
  }
  st->size = n;
  const cl_command_queue cq = q.q;
  std::vector<cl_event> parts;
  cl_event size_read = nullptr;
  cl_int late = CL_SUCCESS; // a part after the first could not be enqueued
  auto enqueue = [&](cl_uint nw, const cl_event *w, cl_event *ev) {
    std::vector<cl_event> after(w, w + nw);
    cl_int e = CL_SUCCESS;
    if (size != nullptr) {
      e = clEnqueueReadBuffer(cq, size->buf, CL_FALSE, 0, 8, st->data() + n,
                              nw, w, &size_read);
      if (e != CL_SUCCESS)
        return e;
      after.push_back(size_read);
    }
    for (uint64_t off = 0; off < n; off += kChunk) {
      cl_event pe = nullptr;
      e = clEnqueueReadBuffer(
          cq, src.buf, CL_FALSE, c.src_origin[0] + off, std::min(kChunk, n - off),
          st->data() + off, parts.empty() ? cl_uint(after.size()) : 1,
          parts.empty() ? after.data() : &parts.back(), &pe);
      if (e != CL_SUCCESS)
        break;
      parts.push_back(pe);
    }
    if (parts.empty() && size_read == nullptr)
      return e;
    // What was enqueued writes into the staging: the sender waits for it.
    late = e;
    *ev = parts.empty() ? size_read : parts.back();
    clRetainEvent(*ev);
    return CL_SUCCESS;
  };
  Outcome o = run(id, c.cmd, d.waits, q, st, Pending::ReadStream, nullptr,
                  enqueue);
  if (o != Outcome::Ok)
    return o != Outcome::Protocol;
  // Not completed before the sender starts: only the sender does.
  Pending *p = completions_.find(id);
  p->error = late;
  if (parts.size() > 1) {
    p->first = parts.front();
    clRetainEvent(p->first);
  }
  try {
    std::thread(&Session::send_read, this, p, std::move(parts), size_read,
                c.src_origin[0])
        .detach();
  } catch (const std::system_error &) {
    send_read(p, std::move(parts), size_read, c.src_origin[0]);
  }
  return true;
}

// The sender of a large READ: each part goes out as READ_DATA once read,
// then the COMPLETION (its last action: the session may be gone after).
// Every part is waited for, sent or not: they write into the staging.
void Session::send_read(Pending *p, std::vector<cl_event> parts,
                        cl_event size_read, uint64_t offset)
{
  std::vector<cl_event> failed; // kept referenced, see Completions::complete
  auto wait = [&](cl_event e) {
    clWaitForEvents(1, &e);
    cl_int st = CL_COMPLETE;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                   nullptr);
    if (st < 0)
      failed.push_back(e);
    else
      clReleaseEvent(e);
    return st < 0 ? st : CL_COMPLETE;
  };
  const uint8_t *bytes = p->staging->data();
  pocl_remote_read_data rd{0, p->staging->size};
  cl_int status = CL_COMPLETE;
  if (size_read != nullptr) {
    status = wait(size_read);
    uint64_t content;
    memcpy(&content, bytes + rd.total, 8);
    rd.total = content > offset ? std::min(rd.total, content - offset) : 0;
  }
  auto read_already = [](cl_event e) {
    cl_int st = CL_QUEUED;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                   nullptr);
    return st <= CL_COMPLETE;
  };
  for (size_t k = 0; k < parts.size(); ++k) {
    cl_int st = wait(parts[k]);
    if (status == CL_COMPLETE)
      status = st;
    // Parts the device has read meanwhile go along: one large message
    // stripes better over the lanes than several (each a fork and join).
    while (status == CL_COMPLETE && k + 1 < parts.size() &&
           read_already(parts[k + 1]))
      status = wait(parts[++k]);
    uint64_t end = std::min((k + 1) * kChunk, rd.total);
    if (status != CL_COMPLETE || end <= rd.offset)
      continue;
    // Logged with a reference to the staging until the client has it.
    client_.send(Sock::Data, POCL_RMSG_READ_DATA, p->id, &rd, sizeof rd,
                 bytes + rd.offset, end - rd.offset, p->staging);
    rd.offset = end;
  }
  if (!failed.empty())
    completions_.keep_failed(failed);
  completions_.complete(p, status);
}

// A buffer argument at an offset: a sub-buffer from there to the parent's
// end (the client knows only parent + offset), made for this launch and
// released right after its enqueue (the runtime keeps it for the command).
// Kept longer, NVIDIA's runtime crashed releasing such sub-buffers once
// their kernel argument had been replaced by another (CTS test_buffers
// sub_buffers_overlapping; a native program alike crashed half the time).
cl_int Session::sub_buffer(const Mem &mem, uint64_t offset, const Device &d,
                           cl_mem &out)
{
  if (offset % d.base_align != 0)
    return CL_MISALIGNED_SUB_BUFFER_OFFSET;
  if (offset >= mem.size)
    return CL_INVALID_VALUE;
  cl_buffer_region r{offset, mem.size - offset};
  cl_int err = CL_SUCCESS;
  cl_mem sub =
      clCreateSubBuffer(mem.buf, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
  if (sub == nullptr)
    return err;
  launch_subs_.push_back(sub);
  out = sub;
  return CL_SUCCESS;
}

// Sets the arguments (decoded: one per kernel argument) that differ from the
// kernel's cached ones.  Returns the first OpenCL error, where it stops.
cl_int Session::set_args(Kernel &k, const Device &d,
                         const std::vector<ArgView> &args)
{
  for (uint32_t i = 0; i < args.size(); ++i) {
    ArgView a = args[i];
    ArgCache &ac = k.args[i];
    uint64_t key = 0; // what identifies the value besides kind and b
    cl_mem mem = nullptr;
    cl_sampler smp = nullptr;
    cl_int err = CL_SUCCESS;
    switch (a.kind) {
    case POCL_REMOTE_ARG_SCALAR:
      if (!ac.scalar)
        return CL_INVALID_ARG_VALUE;
      if (ac.kind == a.kind && ac.bytes.size() == a.a &&
          memcmp(ac.bytes.data(), a.value, a.a) == 0)
        continue;
      break;
    case POCL_REMOTE_ARG_BUFFER:
    case POCL_REMOTE_ARG_IMAGE: {
      if (ac.scalar)
        return CL_INVALID_ARG_VALUE;
      Mem *mm =
          a.kind == POCL_REMOTE_ARG_BUFFER ? find_buffer(a.a) : find_image(a.a);
      if (mm == nullptr)
        return CL_INVALID_MEM_OBJECT;
      key = mm->serial;
      if (a.kind == POCL_REMOTE_ARG_IMAGE)
        a.b = 0;
      if (ac.kind == a.kind && ac.a == key && ac.b == a.b)
        continue;
      mem = a.kind == POCL_REMOTE_ARG_BUFFER ? mm->buf : mm->m;
      if (a.b != 0 && (err = sub_buffer(*mm, a.b, d, mem)) != CL_SUCCESS)
        return err;
      break;
    }
    case POCL_REMOTE_ARG_SAMPLER: {
      auto it = samplers_.find(a.a);
      if (ac.scalar)
        return CL_INVALID_ARG_VALUE;
      if (it == samplers_.end())
        return CL_INVALID_SAMPLER;
      key = it->second.serial;
      if (ac.kind == a.kind && ac.a == key)
        continue;
      smp = it->second.s;
      break;
    }
    case POCL_REMOTE_ARG_NULL:
      if (ac.kind == a.kind)
        continue;
      break;
    case POCL_REMOTE_ARG_SVM:
      // checked even when cached: the allocation may have been freed since
      if (ac.scalar || !svm_arg_ok(i, a.a))
        return CL_INVALID_ARG_VALUE;
      key = a.a;
      if (ac.kind == a.kind && ac.a == key)
        continue;
      break;
    default: // POCL_REMOTE_ARG_LOCAL: the decoder admits no other kind
      key = a.a;
      if (ac.kind == a.kind && ac.a == key)
        continue;
      break;
    }
    switch (a.kind) {
    case POCL_REMOTE_ARG_SCALAR:
      err = clSetKernelArg(k.k, i, a.a, a.value);
      break;
    case POCL_REMOTE_ARG_SAMPLER:
      err = clSetKernelArg(k.k, i, sizeof smp, &smp);
      break;
    case POCL_REMOTE_ARG_NULL:
      err = clSetKernelArg(k.k, i, sizeof(cl_mem), nullptr);
      break;
    case POCL_REMOTE_ARG_LOCAL:
      err = clSetKernelArg(k.k, i, a.a, nullptr);
      break;
    case POCL_REMOTE_ARG_SVM: {
      void *p = reinterpret_cast<void *>(uintptr_t(a.a));
      const UsmFns *usm = svm_usm(a.a);
      err = usm ? usm->arg(k.k, i, p) : clSetKernelArgSVMPointer(k.k, i, p);
      break;
    }
    default:
      err = clSetKernelArg(k.k, i, sizeof mem, &mem);
      break;
    }
    if (err != CL_SUCCESS) {
      ac.kind = UINT32_MAX;
      return err;
    }
    // A sub-buffer lives for this launch only: the next sets it again.
    ac.kind = mem != nullptr && a.b != 0 ? UINT32_MAX : a.kind;
    ac.a = key;
    ac.b = a.b;
    if (a.kind == POCL_REMOTE_ARG_SCALAR)
      ac.bytes.assign(a.value, a.value + a.a);
  }
  return CL_SUCCESS;
}

// A client that gave no local size leaves it to the server (protocol:
// local all 0).  NVIDIA's OpenCL works one out on every launch of a NULL
// local size, some 3 us each (a 100-kernel chain of one work-item each:
// 1.00-1.18 ms against 0.66-0.77 with local size 1, an H100), and PoCL's
// client-side choice, the device's maximum of 1024, ran the stream copy 7%
// slower (measured natively: 204.4 us against 191.3 with
// NVIDIA's choice, 191.5 with 256 and 188.7 with 128).  So on GPUs pocld
// picks once per kernel and global size: the largest divisor of the global
// size up to 256 (and the kernel's own limit), a multiple of the kernel's
// preferred multiple where one divides.  Other devices (PoCL's CPU ones
// choose cheaply and know their threads best) and 2D/3D ranges get NULL.
size_t Session::local_size(Kernel &k, const Device &dev, size_t global)
{
  if (!dev.gpu)
    return 0;
  if (k.last_global == global && k.last_local != 0)
    return k.last_local;
  if (k.wg_cap == 0) {
    size_t max = 0, multiple = 0;
    clGetKernelWorkGroupInfo(k.k, dev.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max,
                             &max, nullptr);
    clGetKernelWorkGroupInfo(k.k, dev.id,
                             CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                             sizeof multiple, &multiple, nullptr);
    k.wg_cap = std::max<size_t>(1, std::min<size_t>(max ? max : 256, 256));
    k.wg_multiple = multiple;
  }
  size_t best = 1, aligned = 0;
  for (size_t l = std::min(k.wg_cap, global); l >= 1; --l)
    if (global % l == 0) {
      if (best == 1)
        best = l;
      if (k.wg_multiple > 1 && l % k.wg_multiple == 0) {
        aligned = l;
        break;
      }
      if (k.wg_multiple <= 1)
        break;
    }
  k.last_global = global;
  k.last_local = aligned != 0 ? aligned : best;
  return k.last_local;
}

bool Session::ndrange(const Decoded &d)
{
  const pocl_remote_ndrange &c = d.ndrange;
  Queue *q = find_queue(c.cmd.queue_id);
  auto kit = kernels_.find(c.kernel_id);
  cl_int err = CL_SUCCESS;
  if (q == nullptr)
    err = CL_INVALID_COMMAND_QUEUE;
  else if (kit == kernels_.end())
    err = CL_INVALID_KERNEL;
  else if (c.work_dim < 1 || c.work_dim > 3)
    err = CL_INVALID_WORK_DIMENSION;
  else if (c.num_args != kit->second.args.size())
    err = CL_INVALID_KERNEL_ARGS;
  else
    err = set_args(kit->second, devs_.devices[q->device], d.args);
  if (err == CL_SUCCESS && kit->second.svm_gen != svm_gen_)
    err = svm_exec_info(kit->second);
  auto release_subs = [&] {
    for (cl_mem sub : launch_subs_)
      clReleaseMemObject(sub);
    launch_subs_.clear();
  };
  Staging *st = nullptr;
  if (err == CL_SUCCESS && d.svm_count != 0)
    err = svm_stage(d, st);
  if (err != CL_SUCCESS) {
    release_subs();
    complete_now(d.hdr.id, err);
    return true;
  }
  Size3 offset(c.offset), global(c.global), local(c.local);
  bool has_local = false;
  for (uint32_t i = 0; i < c.work_dim; ++i)
    has_local |= c.local[i] != 0;
  if (!has_local && c.work_dim == 1 && global.v[0] != 0) {
    local.v[0] = local_size(kit->second, devs_.devices[q->device], global.v[0]);
    has_local = local.v[0] != 0;
  }
  cl_kernel k = kit->second.k;
  Outcome o =
      run(d.hdr.id, c.cmd, d.waits, *q, st, Pending::Kernel, nullptr,
          [&](cl_uint n, const cl_event *w, cl_event *ev) {
            auto kernel = [&](cl_uint n2, const cl_event *w2, cl_event *e2) {
              return clEnqueueNDRangeKernel(q->q, k, c.work_dim, offset.v,
                                            global.v,
                                            has_local ? local.v : nullptr, n2,
                                            w2, e2);
            };
            if (st != nullptr)
              return svm_around(q->q, d, st, n, w, ev, kernel);
            return kernel(n, w, ev);
          },
          st == nullptr);
  release_subs();
  return o != Outcome::Protocol;
}

// MARKER: a marker or, with POCL_RCMD_BARRIER, a barrier.
bool Session::marker(const Decoded &d)
{
  const pocl_remote_cmd &c = d.cmd;
  Queue *q = find_queue(c.queue_id);
  if (q == nullptr) {
    complete_now(d.hdr.id, CL_INVALID_COMMAND_QUEUE);
    return true;
  }
  const bool barrier = c.flags & POCL_RCMD_BARRIER;
  return run(d.hdr.id, c, d.waits, *q, nullptr, Pending::Plain, nullptr,
             [&](cl_uint n, const cl_event *w, cl_event *ev) {
               return barrier ? clEnqueueBarrierWithWaitList(q->q, n, w, ev)
                              : clEnqueueMarkerWithWaitList(q->q, n, w, ev);
             }) != Outcome::Protocol;
}

bool Session::mem_command(const Decoded &d)
{
  const pocl_remote_mem_cmd &c = d.mem;
  const uint32_t type = d.hdr.type;
  const uint64_t id = d.hdr.id;
  const bool is_write = type == POCL_RMSG_WRITE ||
                        type == POCL_RMSG_WRITE_RECT ||
                        type == POCL_RMSG_WRITE_IMAGE;
  const uint8_t *data = d.data;

  auto fail = [&](cl_int e) {
    if (is_write)
      return fail_write(id, c.cmd, c.data_size, e);
    complete_now(id, e);
    return true;
  };
  Queue *q = find_queue(c.cmd.queue_id);
  if (q == nullptr)
    return fail(CL_INVALID_COMMAND_QUEUE);
  const cl_command_queue cq = q->q;
  if (c.cmd.flags & POCL_RCMD_SVM_HOST)
    return svm_host_transfer(d, *q);
  if ((c.cmd.flags & POCL_RCMD_SVM) && type == POCL_RMSG_WRITE) {
    uint8_t *dst = static_cast<uint8_t *>(svm_find(c.dst_id, c.region[0]));
    if (dst == nullptr || c.region[0] == 0 || c.dst_origin[0] != 0) {
      LOG_ERR(sid_, "SVM write of %llu bytes at %#llx: no such allocation",
              (unsigned long long)c.region[0], (unsigned long long)c.dst_id);
      return fail(CL_INVALID_VALUE);
    }
    const UsmFns *usm = svm_usm(c.dst_id);
    return run_write(id, c.cmd, d.waits, *q, data, c.data_size, true,
                     [cq, dst, usm](const uint8_t *src, uint64_t off,
                                    uint64_t len, cl_uint n, const cl_event *w,
                                    cl_event *ev) {
                       return svm_copy(usm, cq, dst + off, src + off, len, n,
                                       w, ev);
                     });
  }
  if (c.cmd.flags & POCL_RCMD_SVM)
    return svm_mem_command(d, *q);
  const Size3 so(c.src_origin), dor(c.dst_origin), rg(c.region);
  const size_t zero[3] = {0, 0, 0};
  auto go = [&](Staging *st, Pending::Kind kind, auto enqueue) {
    return run(id, c.cmd, d.waits, *q, st, kind, nullptr, enqueue) !=
           Outcome::Protocol;
  };
  // Images: the packed host size is region * pixel size.  A client that
  // disagrees gets an error for the command; the framing holds (the data
  // is data_size bytes either way).
  auto image_size_ok = [&](const Mem &img) {
    uint64_t n;
    if (volume(c.region, img.pixel_size, n) && n == c.data_size)
      return true;
    LOG_ERR(sid_,
            "image data size %llu does not match the region %llux%llux%llu "
            "of %u-byte pixels; command %llu refused",
            (unsigned long long)c.data_size, (unsigned long long)c.region[0],
            (unsigned long long)c.region[1], (unsigned long long)c.region[2],
            img.pixel_size, (unsigned long long)id);
    return false;
  };

  switch (type) {
  case POCL_RMSG_READ:
  case POCL_RMSG_READ_RECT:
  case POCL_RMSG_READ_IMAGE: {
    Mem *src = type == POCL_RMSG_READ_IMAGE ? find_image(c.src_id)
                                            : find_buffer(c.src_id);
    if (src == nullptr)
      return fail(CL_INVALID_MEM_OBJECT);
    if (type == POCL_RMSG_READ_IMAGE && !image_size_ok(*src))
      return fail(CL_INVALID_VALUE);
    if (type == POCL_RMSG_READ &&
        !in_bounds(*src, c.src_origin[0], c.region[0]))
      return fail(CL_INVALID_VALUE);
    if (type == POCL_RMSG_READ_RECT &&
        !rect_in_bounds(*src, c.src_origin, c.region, c.src_row_pitch,
                        c.src_slice_pitch))
      return fail(CL_INVALID_VALUE);
    if (type == POCL_RMSG_READ_IMAGE &&
        !image_in_bounds(*src, c.src_origin, c.region))
      return fail(CL_INVALID_VALUE);
    // With a content size, the size buffer's value (read first) and the
    // offset follow the data: the completion sends only what is meaningful.
    Mem *size = nullptr;
    if (c.cmd.flags & POCL_RCMD_CONTENT_SIZE) {
      size = type == POCL_RMSG_READ ? find_buffer(c.size_id) : nullptr;
      if (size == nullptr || size->size < 8)
        return fail(CL_INVALID_MEM_OBJECT);
    }
    if (type == POCL_RMSG_READ && c.data_size >= POCL_REMOTE_READ_STREAM_MIN)
      return read_stream(d, *q, *src, size);
    Staging *st = Staging::create(c.data_size + (size ? 16 : 0), 1,
                                  read_pinning(d.waits, c.cmd.queue_id, *q));
    if (st == nullptr)
      return fail(CL_OUT_OF_HOST_MEMORY);
    st->size = c.data_size;
    if (size != nullptr)
      memcpy(st->data() + c.data_size + 8, &c.src_origin[0], 8);
    return go(st, Pending::Read,
              [&](cl_uint n, const cl_event *w, cl_event *ev) {
                auto read = [&](cl_uint n2, const cl_event *w2, cl_event *e2) {
                  return clEnqueueReadBuffer(cq, src->buf, CL_FALSE, so.v[0],
                                             rg.v[0], st->data(), n2, w2, e2);
                };
                if (size != nullptr)
                  return chained(
                      n, w, ev,
                      [&](cl_uint n1, const cl_event *w1, cl_event *e1) {
                        return clEnqueueReadBuffer(cq, size->buf, CL_FALSE, 0,
                                                   8, st->data() + c.data_size,
                                                   n1, w1, e1);
                      },
                      read);
                if (type == POCL_RMSG_READ)
                  return read(n, w, ev);
                if (type == POCL_RMSG_READ_RECT)
                  return clEnqueueReadBufferRect(
                      cq, src->buf, CL_FALSE, so.v, zero, rg.v, c.src_row_pitch,
                      c.src_slice_pitch, rg.v[0], rg.v[0] * rg.v[1], st->data(),
                      n, w, ev);
                return clEnqueueReadImage(cq, src->m, CL_FALSE, so.v, rg.v, 0,
                                          0, st->data(), n, w, ev);
              });
  }
  case POCL_RMSG_WRITE:
  case POCL_RMSG_WRITE_RECT:
  case POCL_RMSG_WRITE_IMAGE: {
    Mem *dst = type == POCL_RMSG_WRITE_IMAGE ? find_image(c.dst_id)
                                             : find_buffer(c.dst_id);
    if (dst == nullptr)
      return fail(CL_INVALID_MEM_OBJECT);
    if (type == POCL_RMSG_WRITE_IMAGE && !image_size_ok(*dst))
      return fail(CL_INVALID_VALUE);
    if (type == POCL_RMSG_WRITE &&
        !in_bounds(*dst, c.dst_origin[0], c.region[0]))
      return fail(CL_INVALID_VALUE);
    if (type == POCL_RMSG_WRITE_RECT &&
        !rect_in_bounds(*dst, c.dst_origin, c.region, c.dst_row_pitch,
                        c.dst_slice_pitch))
      return fail(CL_INVALID_VALUE);
    if (type == POCL_RMSG_WRITE_IMAGE &&
        !image_in_bounds(*dst, c.dst_origin, c.region))
      return fail(CL_INVALID_VALUE);
    return run_write(
        id, c.cmd, d.waits, *q, data, c.data_size, type == POCL_RMSG_WRITE,
        [cq, type, buf = dst->buf, img = dst->m, dor, rg, zero,
         row = c.dst_row_pitch, slice = c.dst_slice_pitch](
            const uint8_t *src, uint64_t off, uint64_t len, cl_uint n,
            const cl_event *w, cl_event *ev) {
          if (type == POCL_RMSG_WRITE)
            return clEnqueueWriteBuffer(cq, buf, CL_FALSE, dor.v[0] + off, len,
                                        src + off, n, w, ev);
          if (type == POCL_RMSG_WRITE_RECT)
            return clEnqueueWriteBufferRect(cq, buf, CL_FALSE, dor.v, zero,
                                            rg.v, row, slice, rg.v[0],
                                            rg.v[0] * rg.v[1], src, n, w, ev);
          return clEnqueueWriteImage(cq, img, CL_FALSE, dor.v, rg.v, 0, 0, src,
                                     n, w, ev);
        });
  }
  case POCL_RMSG_COPY:
  case POCL_RMSG_COPY_RECT: {
    Mem *src = find_buffer(c.src_id), *dst = find_buffer(c.dst_id);
    if (src == nullptr || dst == nullptr)
      return fail(CL_INVALID_MEM_OBJECT);
    if (type == POCL_RMSG_COPY &&
        (!in_bounds(*src, c.src_origin[0], c.region[0]) ||
         !in_bounds(*dst, c.dst_origin[0], c.region[0])))
      return fail(CL_INVALID_VALUE);
    // A migration between platforms: the whole buffer, through host memory.
    if (type == POCL_RMSG_COPY && src->platform != dst->platform)
      return staged_copy(d, *q, *src, *dst);
    if (type == POCL_RMSG_COPY && (c.cmd.flags & POCL_RCMD_CONTENT_SIZE)) {
      Mem *size = find_buffer(c.size_id);
      if (size == nullptr)
        return fail(CL_INVALID_MEM_OBJECT);
      return copy_content(d, *q, *src, *dst, *size);
    }
    return go(nullptr, Pending::Plain,
              [&](cl_uint n, const cl_event *w, cl_event *ev) {
                if (type == POCL_RMSG_COPY)
                  return clEnqueueCopyBuffer(cq, src->buf, dst->buf, so.v[0],
                                             dor.v[0], rg.v[0], n, w, ev);
                return clEnqueueCopyBufferRect(
                    cq, src->buf, dst->buf, so.v, dor.v, rg.v, c.src_row_pitch,
                    c.src_slice_pitch, c.dst_row_pitch, c.dst_slice_pitch, n, w,
                    ev);
              });
  }
  case POCL_RMSG_FILL: {
    Mem *dst = find_buffer(c.dst_id);
    if (dst == nullptr)
      return fail(CL_INVALID_MEM_OBJECT);
    if (!in_bounds(*dst, c.dst_origin[0], c.region[0]))
      return fail(CL_INVALID_VALUE);
    // The pattern is copied by the enqueue call itself.
    return go(nullptr, Pending::Plain,
              [&](cl_uint n, const cl_event *w, cl_event *ev) {
                return clEnqueueFillBuffer(cq, dst->buf, data, c.data_size,
                                           dor.v[0], rg.v[0], n, w, ev);
              });
  }
  case POCL_RMSG_FILL_IMAGE: {
    Mem *dst = find_image(c.dst_id);
    if (dst == nullptr)
      return fail(CL_INVALID_MEM_OBJECT);
    return go(nullptr, Pending::Plain,
              [&](cl_uint n, const cl_event *w, cl_event *ev) {
                return clEnqueueFillImage(cq, dst->m, data, dor.v, rg.v, n, w,
                                          ev);
              });
  }
  case POCL_RMSG_COPY_IMAGE:
  case POCL_RMSG_COPY_IMAGE_TO_BUFFER:
  case POCL_RMSG_COPY_BUFFER_TO_IMAGE: {
    Mem *src = type == POCL_RMSG_COPY_BUFFER_TO_IMAGE ? find_buffer(c.src_id)
                                                      : find_image(c.src_id);
    Mem *dst = type == POCL_RMSG_COPY_IMAGE_TO_BUFFER ? find_buffer(c.dst_id)
                                                      : find_image(c.dst_id);
    if (src == nullptr || dst == nullptr)
      return fail(CL_INVALID_MEM_OBJECT);
    if (type == POCL_RMSG_COPY_IMAGE && src->platform != dst->platform)
      return staged_copy(d, *q, *src, *dst);
    return go(nullptr, Pending::Plain,
              [&](cl_uint n, const cl_event *w, cl_event *ev) {
                if (type == POCL_RMSG_COPY_IMAGE)
                  return clEnqueueCopyImage(cq, src->m, dst->m, so.v, dor.v,
                                            rg.v, n, w, ev);
                if (type == POCL_RMSG_COPY_IMAGE_TO_BUFFER)
                  return clEnqueueCopyImageToBuffer(cq, src->m, dst->buf, so.v,
                                                    rg.v, dor.v[0], n, w, ev);
                return clEnqueueCopyBufferToImage(cq, src->buf, dst->m, so.v[0],
                                                  dor.v, rg.v, n, w, ev);
              });
  }
  default:
    LOG_ERR(sid_, "unexpected message type %u", type);
    return false;
  }
}

} // namespace pocld
