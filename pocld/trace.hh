// trace.hh - pocld's command trace (--trace PREFIX or POCLD_TRACE,
// doc/tracing.md): each session process writes PREFIX.<session>.json in
// the Chrome trace-event format, its timestamps on CLOCK_MONOTONIC.
//
// Off by default.  When off, each hook costs one load and one predictable
// branch on trace_on: no call, no clock read, no lock.  When on, records go
// to memory under one lock and the file is written at the session's end
// (and on SIGTERM or SIGINT).
#pragma once

#include <cstdint>
#include <string>

namespace pocld {

enum class TraceEv : uint16_t {
  Recv,           // a client message decoded; bytes: its payload
  DataRecv,       // a WRITE's DATA read, as a span; bytes: the payload
  NativeEnqueue,  // the native clEnqueue* call, as a span; bytes: a
                  // WRITE's part it writes
  NativeComplete, // the native event's completion observed
  CompletionSend, // COMPLETION or READ_DATA written; bytes: the payload
  PeerSend,       // PEER_DATA or PEER_NOTIFY written; bytes: the payload
  PeerRecv,       // PEER_DATA or PEER_NOTIFY read; bytes: the payload
  Count
};

// Set by main before any fork (--trace, POCLD_TRACE); read-only after.
inline bool trace_on = false;
inline std::string trace_prefix;

uint64_t trace_now();
void trace_record(TraceEv what, uint64_t id, uint32_t msg_type, uint64_t bytes,
                  uint64_t t0, uint64_t t1);
// A message of the protocol: commands, their data, notifications,
// completions and peers' messages, by the event they are about (others are
// not traced).
void trace_msg(TraceEv what, uint32_t type, uint64_t id, const void *body,
               uint64_t bytes, uint64_t t0);
// In a session process, before it starts any thread: names the file and
// has SIGTERM and SIGINT write it before the process ends.
void trace_session(const uint8_t id[16]);
// Writes the file (a complete JSON document each time).
void trace_flush();

} // namespace pocld

#define POCLD_TRACE(what, id, type, bytes)                                    \
  do {                                                                        \
    if (__builtin_expect(pocld::trace_on, 0))                                 \
      pocld::trace_record(pocld::TraceEv::what, id, type, bytes, 0, 0);       \
  } while (0)
#define POCLD_TRACE_MSG(what, type, id, body, bytes, t0)                      \
  do {                                                                        \
    if (__builtin_expect(pocld::trace_on, 0))                                 \
      pocld::trace_msg(pocld::TraceEv::what, type, id, body, bytes, t0);      \
  } while (0)
// The start of a span: 0 when tracing is off.
#define POCLD_TRACE_T0()                                                      \
  (__builtin_expect(pocld::trace_on, 0) ? pocld::trace_now() : 0)
#define POCLD_TRACE_SPAN(what, id, type, bytes, t0)                           \
  do {                                                                        \
    if (__builtin_expect(pocld::trace_on, 0))                                 \
      pocld::trace_record(pocld::TraceEv::what, id, type, bytes, t0,          \
                          pocld::trace_now());                                \
  } while (0)
