// staged_copy.cc - COPY and COPY_IMAGE between objects of two platforms of
// this server.
//
// The client migrates a buffer or image between two devices of one server
// with a COPY between their objects, also when the devices are in two
// native platforms (an NVIDIA GPU and a PoCL CUSTOM device).  Native
// objects and events cannot cross contexts, so the bytes go through host
// memory here, and never through the client.  The write of the destination
// goes on q behind a user event of q's context, after a marker with the
// command's waits; the marker's callback enqueues the read of the source on
// its device's transfer queue, and the read's callback completes the user
// event.  The read is enqueued only once the waits are done: waiting on that
// in-order queue, it would hold up the peer reader's writes there, which
// the waits may need (examples/remote/pointcloud: the next access unit's
// MIGRATE_IN into the decoder).  The command's event is the write's.
#include "bounds.hh"
#include "run.hh"

#include "log.hh"

#include <mutex>
#include <thread>
#include <vector>

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

// Markers whose waits failed.  PoCL 3.1 locks a command that a failed
// dependency finished once more after finishing it (pocl_update_event_failed),
// so the marker's last reference must not go in its callback: the command
// reader drops these at its next staged copy (the session's process ends
// with the session).
std::mutex g_failed_mu;
std::vector<cl_event> g_failed_marks;

void drop_failed_marks()
{
  std::vector<cl_event> marks;
  {
    std::lock_guard<std::mutex> lock(g_failed_mu);
    marks.swap(g_failed_marks);
  }
  for (cl_event e : marks)
    clReleaseEvent(e);
}

// The read of the source, enqueued once the command's waits are done.
struct Read {
  cl_command_queue q; // the source device's transfer queue
  cl_mem src;         // retained
  bool image;
  size_t origin[3], region[3];
  Staging *st;       // a reference, until the read is done
  cl_event go_write; // a reference: completed when the read is done
  cl_event mark;     // a reference: the marker with the command's waits
};

cl_int enqueue_read(const Read &r, cl_event *ev)
{
  return r.image
             ? clEnqueueReadImage(r.q, r.src, CL_FALSE, r.origin, r.region, 0,
                                  0, r.st->data(), 0, nullptr, ev)
             : clEnqueueReadBuffer(r.q, r.src, CL_FALSE, r.origin[0],
                                   r.region[0], r.st->data(), 0, nullptr, ev);
}

// The waits are done (status CL_COMPLETE) or one failed: the read goes in,
// or the write fails.
void CL_CALLBACK start_read(cl_event, cl_int status, void *user)
{
  Read *r = static_cast<Read *>(user);
  if (status == CL_COMPLETE)
    clReleaseEvent(r->mark);
  else {
    std::lock_guard<std::mutex> lock(g_failed_mu);
    g_failed_marks.push_back(r->mark);
  }
  cl_event rd = nullptr;
  if (status == CL_COMPLETE && enqueue_read(*r, &rd) == CL_SUCCESS) {
    hop_after(rd, r->go_write, r->st);
    clReleaseEvent(rd);
    clFlush(r->q);
  } else
    hop_done(nullptr, CL_INVALID_EVENT, new Hop{r->go_write, r->st});
  clReleaseMemObject(r->src);
  delete r;
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
  // Pageable: the write waits on a user event, and NVIDIA called a read of
  // pinned staging behind one back 12-20 ms late (doc/benchmarks.md,
  // "NVIDIA's completion callbacks"); pinned staging is untried here.
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
  drop_failed_marks();
  Read rd{sq,
          image ? src.m : src.buf,
          image,
          {so[0], so[1], so[2]},
          {rg[0], rg[1], rg[2]},
          st,
          nullptr,
          nullptr};
  rd.region[0] = image ? rg[0] : n;
  auto enqueue = [&](cl_uint nw, const cl_event *wl, cl_event *ev) {
    cl_int r = CL_SUCCESS;
    cl_event go_write = clCreateUserEvent(contexts_[q.platform], &r);
    if (go_write == nullptr)
      return r;
    // Without waits the read goes in now, before the write: a failure of
    // either then fails the command before anything waits on go_write.
    cl_event read = nullptr, mark = nullptr;
    if (nw == 0)
      r = enqueue_read(rd, &read);
    else
      r = clEnqueueMarkerWithWaitList(cq, nw, wl, &mark);
    if (r == CL_SUCCESS)
      r = image ? clEnqueueWriteImage(cq, dst.m, CL_FALSE, dor, rg, 0, 0,
                                      st->data(), 1, &go_write, ev)
                : clEnqueueWriteBuffer(cq, dst.buf, CL_FALSE, dor[0], n,
                                       st->data(), 1, &go_write, ev);
    if (r != CL_SUCCESS) {
      if (read != nullptr) {
        // It reads into the staging, whose reference run() drops now.
        st->refs.fetch_add(1);
        hop_after(read, nullptr, st);
        clFlush(sq);
      }
      for (cl_event e : {go_write, read, mark})
        if (e != nullptr)
          clReleaseEvent(e);
      return r;
    }
    st->refs.fetch_add(1); // the read's
    if (read != nullptr) {
      hop_after(read, go_write, st);
      clReleaseEvent(read);
      clFlush(sq);
      return r;
    }
    Read *later = new Read(rd);
    later->go_write = go_write;
    later->mark = mark; // start_read drops it
    clRetainMemObject(later->src);
    // NVIDIA calls a callback set on a command still waiting about 20 ms
    // late (doc/benchmarks.md, "NVIDIA's completion callbacks"): on such platforms a thread of its
    // own waits for the marker, which needs nothing else from this session.
    if (devs_.platforms[q.platform].wait_completion) {
      std::thread([later] {
        cl_int st = CL_COMPLETE;
        clWaitForEvents(1, &later->mark);
        clGetEventInfo(later->mark, CL_EVENT_COMMAND_EXECUTION_STATUS,
                       sizeof st, &st, nullptr);
        start_read(later->mark, st, later);
      }).detach();
      return r;
    }
    if (clSetEventCallback(mark, CL_COMPLETE, start_read, later) != CL_SUCCESS)
      start_read(mark, CL_INVALID_EVENT, later);
    return r;
  };
  return run(d.hdr.id, c.cmd, d.waits, q, st, Pending::Plain, nullptr,
             enqueue) != Outcome::Protocol;
}

} // namespace pocld
