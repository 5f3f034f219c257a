/* pocl_remote_bulk_inline.c - the inline bulk transport
   (pocl_remote_bulk.h): a payload goes on its message's link, in the
   message's own send.  Part of the protocol library.  */

#include "pocl_remote_bulk.h"
#include "pocl_remote_lanes.h"

int
pocl_remote_no_registration (pocl_remote_bulk *b, void *p, uint64_t n)
{
  (void)b;
  (void)p;
  (void)n;
  return 0;
}

void
pocl_remote_no_unregistration (pocl_remote_bulk *b, void *p)
{
  (void)b;
  (void)p;
}

int
pocl_remote_bulk_skip (pocl_remote_link *link, const pocl_remote_bulk_io *io,
                       uint64_t n)
{
  if (io == NULL || io->recv0 == NULL)
    return pocl_remote_link_discard (link, n);
  char sink[16384];
  while (n > 0)
    {
      uint64_t k = n < sizeof (sink) ? n : sizeof (sink);
      if (io->recv0 (io->recv0_arg, sink, k))
        return -1;
      n -= k;
    }
  return 0;
}

int
pocl_remote_inline_recv (pocl_remote_link *link, void *dst, uint64_t n,
                         const pocl_remote_bulk_io *io, uint64_t *arrived)
{
  char *d = (char *)dst;
  uint64_t in = 0;
  /* Without a listener, in one piece: a buffered reader then reads the
     rest with one call.  */
  int tell = io != NULL && io->grown != NULL && io->step > 0;
  while (in < n)
    {
      uint64_t piece = tell ? pocl_remote_bulk_piece (io, in, n) : n;
      uint64_t len = n - in < piece ? n - in : piece;
      int r = d == NULL ? pocl_remote_bulk_skip (link, io, len)
              : io != NULL && io->recv0 != NULL
                  ? io->recv0 (io->recv0_arg, d + in, len)
                  : pocl_remote_link_recv_full (link, d + in, len);
      if (r)
        break;
      in += len;
      if (tell)
        io->grown (io->grown_arg, in - len, in);
    }
  *arrived = in;
  return in == n ? POCL_REMOTE_BULK_OK : POCL_REMOTE_BULK_BROKEN;
}

static uint32_t
inline_mark (pocl_remote_bulk *b, uint64_t n)
{
  (void)b;
  (void)n;
  return 0;
}

/* Only reached for a mark of 0, which goes in the message's own send.  */
static int
inline_send (pocl_remote_bulk *b, pocl_remote_link *link, uint32_t mark,
             const void *p, uint64_t n, const pocl_remote_bulk_src *src)
{
  (void)b;
  (void)mark;
  /* Bytes still being produced leave by stripes as they are ready.  */
  uint64_t piece = src != NULL ? POCL_REMOTE_STRIPE : n, off;
  for (off = 0; off < n; off += piece)
    {
      uint64_t len = n - off < piece ? n - off : piece;
      if (src != NULL)
        src->ready (src->arg, off + len);
      struct iovec iov = { (char *)p + off, (size_t)len };
      if (pocl_remote_link_send (link, &iov, 1))
        return POCL_REMOTE_BULK_BROKEN;
    }
  return POCL_REMOTE_BULK_OK;
}

static int
inline_recv (pocl_remote_bulk *b, pocl_remote_link *link, uint32_t mark,
             void *dst, uint64_t n, const pocl_remote_bulk_io *io,
             uint64_t *arrived)
{
  (void)b;
  if (mark != 0)
    {
      *arrived = 0;
      return POCL_REMOTE_BULK_REFUSED;
    }
  return pocl_remote_inline_recv (link, dst, n, io, arrived);
}

/* Nothing of its own: the link is all.  */
static void
inline_nothing (pocl_remote_bulk *b)
{
  (void)b;
}

const pocl_remote_bulk_ops pocl_remote_inline_bulk_ops = {
  "inline",
  inline_mark,
  inline_send,
  inline_recv,
  pocl_remote_no_registration,
  pocl_remote_no_unregistration,
  inline_nothing,
  inline_nothing,
};
