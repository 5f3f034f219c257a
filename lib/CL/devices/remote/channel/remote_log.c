/* remote_log.c - the replay log of a socket: what was sent and not yet
   acknowledged, kept for a resume (doc/reconnect.md, remote_resume.c).
   Senders append to their socket's log under the socket's send lock, which
   they hold anyway; the server's ACKs only move a counter, and the next
   sender drops the acknowledged entries.  */

#include <string.h>

#include "remote_channel_private.h"

#define LOG_INITIAL_ENTRIES 256

static char *
entry_bytes (remote_log_entry *e)
{
  return e->heap ? e->heap : e->inl;
}

static void
entry_free (remote_log_entry *e)
{
  free (e->heap);
  e->heap = NULL;
}

/* Drops the entries the server has handled (count `seen`).  */
void
pocl_remote_log_trim (remote_log *log, uint64_t seen)
{
  while (log->first < log->next && log->first <= seen)
    entry_free (&log->ring[log->first++ & (log->cap - 1)]);
}

static int
log_grow (remote_log *log)
{
  uint64_t cap = log->cap ? log->cap * 2 : LOG_INITIAL_ENTRIES;
  remote_log_entry *ring = malloc (cap * sizeof (remote_log_entry));
  if (ring == NULL)
    return -1;
  uint64_t q;
  for (q = log->first; q < log->next; ++q)
    memcpy (&ring[q & (cap - 1)], &log->ring[q & (log->cap - 1)],
            sizeof (remote_log_entry));
  free (log->ring);
  log->ring = ring;
  log->cap = cap;
  return 0;
}

/* Appends one message (iov[0] the header, iov[1..] body and payload);
   pieces from index `stable_from` on are referenced, the others copied.
   -1 without memory.  */
int
pocl_remote_log_append (remote_log *log, const struct iovec *iov, int n,
                        int stable_from)
{
  if (log->first == 0)
    log->first = log->next = 1;
  if (log->next - log->first == log->cap && log_grow (log))
    return -1;
  remote_log_entry *e = &log->ring[log->next & (log->cap - 1)];
  size_t copied = 0;
  int i;
  for (i = 1; i < stable_from && i < n; ++i)
    copied += iov[i].iov_len;
  e->heap = copied > REMOTE_LOG_INLINE ? malloc (copied) : NULL;
  if (copied > REMOTE_LOG_INLINE && e->heap == NULL)
    return -1;
  memcpy (&e->hdr, iov[0].iov_base, sizeof (e->hdr));
  char *p = entry_bytes (e);
  for (i = 1; i < stable_from && i < n; ++i)
    {
      memcpy (p, iov[i].iov_base, iov[i].iov_len);
      p += iov[i].iov_len;
    }
  e->copied = copied;
  e->nref = 0;
  for (; i < n; ++i)
    e->ref[e->nref++] = iov[i];
  ++log->next;
  return 0;
}

/* The pieces of entry e as sent (at most 8): their count.  */
int
pocl_remote_log_iov (remote_log_entry *e, struct iovec *iov)
{
  int n = 0, i;
  iov[n].iov_base = &e->hdr;
  iov[n++].iov_len = sizeof (e->hdr);
  if (e->copied)
    {
      iov[n].iov_base = entry_bytes (e);
      iov[n++].iov_len = e->copied;
    }
  for (i = 0; i < e->nref; ++i)
    iov[n++] = e->ref[i];
  return n;
}
