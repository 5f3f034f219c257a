// peer_order.hh - the order that the peer mesh gives, told to
// ThreadSanitizer.
//
// What a peer sends comes after what it was sent before: a buffer chained
// through three servers comes back in a MIGRATE_IN only after this
// session's PUSH read it and the other two servers ran their kernels on
// it.  That order runs through other processes and their sockets, which
// ThreadSanitizer does not follow: it took PoCL's write of the returning
// bytes and its read for the PUSH, in two of the pthread device's threads
// with no lock between them, for a race (remote/multi_server_ucx_three,
// under load).  In a ThreadSanitizer build, every message to a peer
// releases the session's token and every message from one acquires it;
// elsewhere both are empty.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define POCLD_PEER_ORDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POCLD_PEER_ORDER_TSAN 1
#endif
#endif

#ifdef POCLD_PEER_ORDER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace pocld {

inline void peer_order_sent(const void *token)
{
#ifdef POCLD_PEER_ORDER_TSAN
  __tsan_release(const_cast<void *>(token));
#else
  (void)token;
#endif
}

inline void peer_order_heard(const void *token)
{
#ifdef POCLD_PEER_ORDER_TSAN
  __tsan_acquire(const_cast<void *>(token));
#else
  (void)token;
#endif
}

} // namespace pocld
