// staged_copy.cc - COPY and COPY_IMAGE between objects of two platforms of
// this server.
//
// The client migrates a buffer or image between two devices of one server
// with a COPY between their objects, also when the devices are in two
// native platforms (an NVIDIA GPU and a PoCL CUSTOM device).  Native
// objects and events cannot cross contexts, so the bytes go through host
// memory here, and never through the client: the source is read on its
// device's transfer queue once the command's waits are done (a marker on
// q, whose callback starts the read through a user event of the source's
// context), and the read's callback starts the write on q through a user
// event of q's context.  The command's event is the write's.
#include "bounds.hh"
#include "run.hh"

#include "log.hh"

namespace pocld {

namespace {

// One hop between contexts: `next`, a user event of the other context (if
// any), completes when the event it was registered on does (failed:
// failed); then the staging reference `st` (if any) is dropped.
struct Hop {
  cl_event next;
  Staging *st;
};

void CL_CALLBACK hop_done(cl_event, cl_int status, void *user)
{
  Hop *h = static_cast<Hop *>(user);
  if (h->next != nullptr) {
    clSetUserEventStatus(h->next, status == CL_COMPLETE ? CL_COMPLETE
                                                        : CL_INVALID_EVENT);
    clReleaseEvent(h->next);
  }
  if (h->st != nullptr)
    h->st->unref();
  delete h;
}

void hop_after(cl_event ev, cl_event next, Staging *st)
{
  Hop *h = new Hop{next, st};
  if (clSetEventCallback(ev, CL_COMPLETE, hop_done, h) != CL_SUCCESS)
    hop_done(ev, CL_INVALID_EVENT, h);
}

} // namespace

bool Session::staged_copy(const Decoded &d, Queue &q, Mem &src, Mem &dst)
{
  const pocl_remote_mem_cmd &c = d.mem;
  const bool image = d.hdr.type == POCL_RMSG_COPY_IMAGE;
  const size_t so[3] = {c.src_origin[0], c.src_origin[1], c.src_origin[2]};
  const size_t dor[3] = {c.dst_origin[0], c.dst_origin[1], c.dst_origin[2]};
  const size_t rg[3] = {c.region[0], c.region[1], c.region[2]};
  uint64_t n = c.region[0];
  cl_int err = CL_SUCCESS;
  // Buffer bounds were checked by the caller.
  if (dst.platform != q.platform)
    err = CL_INVALID_CONTEXT;
  else if (image && (src.pixel_size != dst.pixel_size ||
                     !image_in_bounds(src, c.src_origin, c.region) ||
                     !image_in_bounds(dst, c.dst_origin, c.region) ||
                     !volume(c.region, src.pixel_size, n)))
    err = CL_INVALID_VALUE;
  Queue side{};
  side.device = src.device;
  side.platform = src.platform;
  cl_command_queue sq = nullptr;
  if (err == CL_SUCCESS)
    sq = transfer_queue(side, err);
  // Pageable: NVIDIA reports a read into pinned staging that waited on a
  // user event 12-20 ms late (doc/benchmarks.md, stop 14).
  Staging *st = nullptr;
  if (err == CL_SUCCESS && (st = Staging::create(n, 1)) == nullptr)
    err = CL_OUT_OF_HOST_MEMORY;
  if (err != CL_SUCCESS) {
    LOG_ERR(sid_, "COPY %llu between platforms %u and %u: error %d",
            (unsigned long long)d.hdr.id, src.platform, dst.platform, err);
    complete_now(d.hdr.id, err);
    return true;
  }
  const cl_command_queue cq = q.q;
  auto enqueue = [&](cl_uint nw, const cl_event *wl, cl_event *ev) {
    cl_int r = CL_SUCCESS;
    cl_event go_write = clCreateUserEvent(contexts_[q.platform], &r);
    if (go_write == nullptr)
      return r;
    // The waits are in q's context: a marker there starts the read.
    cl_event go_read = nullptr, mark = nullptr;
    if (nw > 0 &&
        (go_read = clCreateUserEvent(contexts_[src.platform], &r)) != nullptr)
      r = clEnqueueMarkerWithWaitList(cq, nw, wl, &mark);
    cl_event rd = nullptr;
    const cl_uint nr = go_read != nullptr ? 1 : 0;
    const cl_event *rw = nr ? &go_read : nullptr;
    if (r == CL_SUCCESS)
      r = image ? clEnqueueReadImage(sq, src.m, CL_FALSE, so, rg, 0, 0,
                                     st->data(), nr, rw, &rd)
                : clEnqueueReadBuffer(sq, src.buf, CL_FALSE, so[0], n,
                                      st->data(), nr, rw, &rd);
    // After the marker: on an in-order q, a marker behind the write would
    // wait for it, and so for the read.
    if (r == CL_SUCCESS)
      r = image ? clEnqueueWriteImage(cq, dst.m, CL_FALSE, dor, rg, 0, 0,
                                      st->data(), 1, &go_write, ev)
                : clEnqueueWriteBuffer(cq, dst.buf, CL_FALSE, dor[0], n,
                                       st->data(), 1, &go_write, ev);
    if (rd != nullptr) {
      // It reads into the staging, whose reference run() drops at once if
      // the write failed.
      st->refs.fetch_add(1);
      hop_after(rd, r == CL_SUCCESS ? go_write : nullptr, st);
      clReleaseEvent(rd);
      clFlush(sq);
    }
    if (r != CL_SUCCESS)
      clReleaseEvent(go_write);
    // The read, if it is in, waits for go_read.
    if (mark != nullptr) {
      hop_after(mark, go_read, nullptr);
      clReleaseEvent(mark);
    } else if (go_read != nullptr)
      clReleaseEvent(go_read);
    return r;
  };
  return run(d.hdr.id, c.cmd, d.waits, q, st, Pending::Plain, nullptr,
             enqueue) != Outcome::Protocol;
}

} // namespace pocld
