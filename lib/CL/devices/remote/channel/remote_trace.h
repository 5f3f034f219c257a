/* remote_trace.h - the client's command trace (POCL_REMOTE_TRACE=FILE,
   doc/tracing.md): every command's life as Chrome trace events.

   Off by default.  When off, each hook costs one load and one predictable
   branch on pocl_remote_trace_on: no call, no clock read, no lock.  When
   on, records go to an in-memory buffer under one lock and are written as
   one JSON file at exit.  */

#ifndef POCL_REMOTE_TRACE_H
#define POCL_REMOTE_TRACE_H

#include <stdint.h>

/* What happened to a command.  The client's and pocld's names share the
   table of doc/tracing.md.  */
typedef enum remote_trace_what
{
  REMOTE_TRACE_ENQUEUE,    /* the driver took the command (clEnqueue*) */
  REMOTE_TRACE_SEND,       /* its message written; bytes: the message */
  REMOTE_TRACE_SEND_DATA,  /* a WRITE's DATA written; bytes: the payload */
  REMOTE_TRACE_NOTIFY,     /* NOTIFY_EVENT sent: a foreign event is done */
  REMOTE_TRACE_COMPLETION, /* COMPLETION read; bytes: its payload */
  REMOTE_TRACE_READ_DATA,  /* a READ_DATA part read; bytes: the part */
  REMOTE_TRACE_COMPLETE,   /* the event set complete (or failed) */
  REMOTE_TRACE_WHAT_COUNT
} remote_trace_what;

struct remote_server;

/* Set once at library load from POCL_REMOTE_TRACE; read-only after.  */
extern int pocl_remote_trace_on;

void pocl_remote_trace_record (remote_trace_what what, uint32_t server,
                               uint64_t id, uint32_t msg_type, uint64_t bytes,
                               uint64_t t0, uint64_t t1);
uint64_t pocl_remote_trace_now (void);

/* A point event now.  */
#define REMOTE_TRACE(what, server, id, type, bytes)                           \
  do                                                                          \
    {                                                                         \
      if (__builtin_expect (pocl_remote_trace_on, 0))                         \
        pocl_remote_trace_record (what, server, id, type, bytes, 0, 0);       \
    }                                                                         \
  while (0)

/* The start of a span: 0 when tracing is off.  */
#define REMOTE_TRACE_T0()                                                     \
  (__builtin_expect (pocl_remote_trace_on, 0) ? pocl_remote_trace_now () : 0)

/* A span from t0 to now.  */
#define REMOTE_TRACE_SPAN(what, server, id, type, bytes, t0)                  \
  do                                                                          \
    {                                                                         \
      if (__builtin_expect (pocl_remote_trace_on, 0))                         \
        pocl_remote_trace_record (what, server, id, type, bytes, t0,          \
                                  pocl_remote_trace_now ());                  \
    }                                                                         \
  while (0)

/* Notes a session's server in the trace's metadata, with its clock offset
   (its CLOCK_MONOTONIC minus ours), which remote_session.c measures, and
   the round trip of the sample that measured it (the offset is +- half).  */
void pocl_remote_trace_server (struct remote_server *s, int64_t offset_ns,
                               uint64_t rtt_ns);

#endif
