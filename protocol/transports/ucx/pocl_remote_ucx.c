/* pocl_remote_ucx.c - bulk payloads over UCX (pocl_remote_ucx.h).  */

#include "pocl_remote_ucx.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ucp/api/ucp.h>
#include <ucs/config/global_opts.h>

/* Memory registered once (pocl_remote_ucx_register): at most this many
   blocks; more are left to UCX's own registration cache.  */
#define UCX_REGISTERED_MAX 256
/* Pieces of one payload in flight at once.  */
#define UCX_PIECES_IN_FLIGHT 32
/* A wait progresses the worker this long before it naps between progress
   calls (up to UCX_NAP_MAX_NS): a payload's next piece is usually that
   close.  Not a sleep on the worker's wake-up descriptor: asking UCX for
   one (UCP_FEATURE_WAKEUP) leaves out its shared-memory transports, which
   cannot wake a sleeper (posix, cma: "Destination is unreachable").  */
#define UCX_SPIN_NS 50000
#define UCX_NAP_MAX_NS 200000

struct pocl_remote_ucx
{
  ucp_context_h context;
  ucp_worker_h worker;
  pthread_mutex_t lock; /* the registrations */
  struct
  {
    char *base;
    size_t len;
    ucp_mem_h memh;
  } reg[UCX_REGISTERED_MAX];
  unsigned nreg;
};

struct pocl_remote_ucx_ep
{
  pocl_remote_ucx *u;
  ucp_ep_h ep;
  int failed;       /* atomic */
  int *also_failed; /* the caller's flag, set with failed */
};

static uint64_t
now_ns (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static pocl_remote_ucx *g_engine;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static void (*g_log) (const char *);

/* UCX is loaded when first wanted, not linked: as it loads, its libucm
   patches glibc's mmap, munmap, madvise and brk in the whole process (to
   keep its registration cache right) and libucs installs crash handlers.
   A pocld that never uses UCX (--ucx off, no RDMA device) carries
   neither, and needs no UCX installed.  */
static struct
{
  __typeof__ (ucs_status_string) *status_string;
  __typeof__ (ucs_global_opts_get_value) *global_opts_get_value;
  __typeof__ (ucs_global_opts_set_value) *global_opts_set_value;
  __typeof__ (ucp_config_read) *config_read;
  __typeof__ (ucp_config_release) *config_release;
  __typeof__ (ucp_init_version) *init_version;
  __typeof__ (ucp_cleanup) *cleanup;
  __typeof__ (ucp_worker_create) *worker_create;
  __typeof__ (ucp_worker_get_address) *worker_get_address;
  __typeof__ (ucp_worker_release_address) *worker_release_address;
  __typeof__ (ucp_worker_progress) *worker_progress;
  __typeof__ (ucp_ep_create) *ep_create;
  __typeof__ (ucp_ep_close_nbx) *ep_close_nbx;
  __typeof__ (ucp_tag_send_nbx) *tag_send_nbx;
  __typeof__ (ucp_tag_recv_nbx) *tag_recv_nbx;
  __typeof__ (ucp_tag_recv_request_test) *tag_recv_request_test;
  __typeof__ (ucp_request_check_status) *request_check_status;
  __typeof__ (ucp_request_cancel) *request_cancel;
  __typeof__ (ucp_request_free) *request_free;
  __typeof__ (ucp_mem_map) *mem_map;
  __typeof__ (ucp_mem_unmap) *mem_unmap;
} lib;
static int g_loaded;

/* The symbol prefix_field of UCX's libraries, for lib.field.  */
#define UCX_SYMBOL(prefix, field)                                             \
  {                                                                           \
    #prefix "_" #field, offsetof (__typeof__ (lib), field)                    \
  }
static const struct
{
  const char *name;
  size_t offset;
} lib_symbols[] = {
  UCX_SYMBOL (ucs, status_string),
  UCX_SYMBOL (ucs, global_opts_get_value),
  UCX_SYMBOL (ucs, global_opts_set_value),
  UCX_SYMBOL (ucp, config_read),
  UCX_SYMBOL (ucp, config_release),
  UCX_SYMBOL (ucp, init_version),
  UCX_SYMBOL (ucp, cleanup),
  UCX_SYMBOL (ucp, worker_create),
  UCX_SYMBOL (ucp, worker_get_address),
  UCX_SYMBOL (ucp, worker_release_address),
  UCX_SYMBOL (ucp, worker_progress),
  UCX_SYMBOL (ucp, ep_create),
  UCX_SYMBOL (ucp, ep_close_nbx),
  UCX_SYMBOL (ucp, tag_send_nbx),
  UCX_SYMBOL (ucp, tag_recv_nbx),
  UCX_SYMBOL (ucp, tag_recv_request_test),
  UCX_SYMBOL (ucp, request_check_status),
  UCX_SYMBOL (ucp, request_cancel),
  UCX_SYMBOL (ucp, request_free),
  UCX_SYMBOL (ucp, mem_map),
  UCX_SYMBOL (ucp, mem_unmap),
};

static void
set_log (void (*log) (const char *))
{
  void (*none) (const char *) = NULL;
  if (log != NULL)
    __atomic_compare_exchange_n (&g_log, &none, log, 0, __ATOMIC_ACQ_REL,
                                 __ATOMIC_ACQUIRE);
}

static void
log_text (const char *what, const char *why)
{
  char msg[256];
  void (*log) (const char *) = __atomic_load_n (&g_log, __ATOMIC_ACQUIRE);
  snprintf (msg, sizeof (msg), "UCX: %s: %s", what, why);
  if (log != NULL)
    log (msg);
}

static void
load_library (void)
{
  /* libucs reads this as it loads.  Its default catches SIGSEGV, SIGBUS
     and the like to print a backtrace with malloc and dladdr, in the
     crashing process: a crash inside malloc (a vendor library's heap
     overrun) would then hang a session that should die.  An operator may
     still ask for it.  */
  setenv ("UCX_HANDLE_ERRORS", "none", 0);
  /* The soname of the UCX 1.x ABI (Debian's libucx0); libucs, which
     defines ucs_status_string, is among its dependencies.  */
  void *h = dlopen ("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    {
      log_text ("loading libucp.so.0", dlerror ());
      return;
    }
  for (size_t i = 0; i < sizeof (lib_symbols) / sizeof (lib_symbols[0]); ++i)
    {
      void *f = dlsym (h, lib_symbols[i].name);
      if (f == NULL)
        {
          log_text (lib_symbols[i].name, "not in libucp.so.0");
          memset (&lib, 0, sizeof (lib));
          return;
        }
      memcpy ((char *)&lib + lib_symbols[i].offset, &f, sizeof (f));
    }
  g_loaded = 1;
}

int
pocl_remote_ucx_load (void (*log) (const char *msg))
{
  set_log (log);
  pthread_once (&g_load_once, load_library);
  return g_loaded ? 0 : -1;
}

static void
log_status (const char *what, ucs_status_t st)
{
  log_text (what, lib.status_string (st));
}

static void
make_engine (void)
{
  if (pocl_remote_ucx_load (NULL) != 0)
    return;
  pocl_remote_ucx *u = calloc (1, sizeof (*u));
  if (u == NULL)
    return;
  ucp_config_t *config = NULL;
  ucs_status_t st = lib.config_read (NULL, NULL, &config);
  if (st != UCS_OK)
    {
      log_status ("reading the configuration", st);
      free (u);
      return;
    }
  ucp_params_t p;
  memset (&p, 0, sizeof (p));
  p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  p.features = UCP_FEATURE_TAG;
  p.mt_workers_shared = 1;
  st = lib.init_version (UCP_API_MAJOR, UCP_API_MINOR, &p, config,
                          &u->context);
  lib.config_release (config);
  if (st != UCS_OK)
    {
      log_status ("init", st);
      free (u);
      return;
    }
  ucp_worker_params_t wp;
  memset (&wp, 0, sizeof (wp));
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  st = lib.worker_create (u->context, &wp, &u->worker);
  if (st != UCS_OK)
    {
      log_status ("worker", st);
      lib.cleanup (u->context);
      free (u);
      return;
    }
  pthread_mutex_init (&u->lock, NULL);
  g_engine = u;
}

pocl_remote_ucx *
pocl_remote_ucx_engine (void (*log) (const char *msg))
{
  set_log (log);
  pthread_once (&g_once, make_engine);
  return g_engine;
}

int
pocl_remote_ucx_address (pocl_remote_ucx *u, void **addr, size_t *len)
{
  ucp_address_t *a = NULL;
  size_t n = 0;
  ucs_status_t st = lib.worker_get_address (u->worker, &a, &n);
  if (st != UCS_OK)
    {
      log_status ("worker address", st);
      return -1;
    }
  *addr = a;
  *len = n;
  return 0;
}

void
pocl_remote_ucx_free_address (pocl_remote_ucx *u, void *addr)
{
  lib.worker_release_address (u->worker, (ucp_address_t *)addr);
}

static void
ep_error (void *arg, ucp_ep_h ep, ucs_status_t status)
{
  (void)ep;
  pocl_remote_ucx_ep *e = (pocl_remote_ucx_ep *)arg;
  __atomic_store_n (&e->failed, 1, __ATOMIC_RELEASE);
  if (e->also_failed != NULL)
    __atomic_store_n (e->also_failed, 1, __ATOMIC_RELEASE);
  log_status ("endpoint failed", status);
}

pocl_remote_ucx_ep *
pocl_remote_ucx_connect (pocl_remote_ucx *u, const void *addr, size_t len,
                         int *failed)
{
  (void)len;
  pocl_remote_ucx_ep *e = calloc (1, sizeof (*e));
  if (e == NULL)
    return NULL;
  e->u = u;
  e->also_failed = failed;
  ucp_ep_params_t p;
  memset (&p, 0, sizeof (p));
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                 | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                 | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = (const ucp_address_t *)addr;
  /* A peer that goes away fails what is in flight to it, and later sends,
     instead of leaving them waiting.  UCX 1.13's shared-memory transports
     cannot report that (the endpoint is "unreachable" in this mode): there
     the waits' own time limits stand in.  */
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = ep_error;
  p.err_handler.arg = e;
  /* Where that is so, UCX logs it as an ERROR before it returns: quiet,
     since the fallback below is expected (the level is process-wide, and
     UCX's own messages of other threads meanwhile are lost with it).  */
  static pthread_mutex_t quiet = PTHREAD_MUTEX_INITIALIZER;
  char level[32];
  pthread_mutex_lock (&quiet);
  int restore
      = lib.global_opts_get_value ("LOG_LEVEL", level, sizeof (level)) == UCS_OK
        && lib.global_opts_set_value ("LOG_LEVEL", "fatal") == UCS_OK;
  ucs_status_t st = lib.ep_create (u->worker, &p, &e->ep);
  if (restore)
    lib.global_opts_set_value ("LOG_LEVEL", level);
  pthread_mutex_unlock (&quiet);
  if (st == UCS_ERR_UNREACHABLE)
    {
      p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
      st = lib.ep_create (u->worker, &p, &e->ep);
    }
  if (st != UCS_OK)
    {
      log_status ("endpoint", st);
      free (e);
      return NULL;
    }
  return e;
}

int
pocl_remote_ucx_ep_failed (const pocl_remote_ucx_ep *ep)
{
  return __atomic_load_n (&ep->failed, __ATOMIC_ACQUIRE);
}

/* Between progress calls that found nothing to do: nothing for the first
   UCX_SPIN_NS, then naps growing to UCX_NAP_MAX_NS.  */
static void
idle (uint64_t since, uint64_t *nap)
{
  if (now_ns () - since < UCX_SPIN_NS)
    return;
  struct timespec ts = { 0, (long)*nap };
  nanosleep (&ts, NULL);
  if (*nap < UCX_NAP_MAX_NS)
    *nap *= 2;
}

static void close_under (pocl_remote_ucx_ep *ep);
static uint64_t deadline_of (int timeout_ms);

/* Progresses a cancelled request, or a send whose endpoint was closed under
   it, until UCX ends it, then frees it.  UCX's shared-memory transports do
   not end a send that the other end never matched when its endpoint is
   closed: at `until` it is given back to UCX, which frees it when it
   ends.  The endpoint being closed, UCX moves no more of its data;
   a peer that reads it in place (cma) gets an error once it is freed.  */
#define UCX_END_WAIT_NS 1000000000ull
static void
end_request (pocl_remote_ucx *u, void *req, uint64_t until)
{
  while (lib.request_check_status (req) == UCS_INPROGRESS
         && now_ns () < until)
    lib.worker_progress (u->worker);
  lib.request_free (req);
}

/* Progresses until req completes or the deadline (0: none) passes, then
   frees it: its status, UCS_ERR_TIMED_OUT if it was ended for the time.
   info: a receive's (ucp_tag_recv_request_test, for its length in *info);
   NULL: a send on send_ep, or a close (send_ep NULL).  A request ended for
   the time must be complete before it is freed, its buffer being the
   caller's: a receive is cancelled; a send cannot be, so its endpoint is
   closed under it first (end_request).  */
static ucs_status_t
wait_request (pocl_remote_ucx *u, void *req, uint64_t deadline,
              ucp_tag_recv_info_t *info, pocl_remote_ucx_ep *send_ep,
              const int *abort)
{
  if (req == NULL)
    return UCS_OK;
  if (UCS_PTR_IS_ERR (req))
    return UCS_PTR_STATUS (req);
  uint64_t start = now_ns (), nap = 10000;
  ucs_status_t st;
  while ((st = info ? lib.tag_recv_request_test (req, info)
                    : lib.request_check_status (req))
         == UCS_INPROGRESS)
    {
      if (lib.worker_progress (u->worker) != 0)
        {
          start = now_ns ();
          nap = 10000;
          continue;
        }
      if ((deadline != 0 && now_ns () >= deadline)
          || (abort != NULL && __atomic_load_n (abort, __ATOMIC_ACQUIRE)))
        {
          if (info != NULL)
            lib.request_cancel (u->worker, req);
          else if (send_ep != NULL)
            close_under (send_ep);
          end_request (u, req, now_ns () + UCX_END_WAIT_NS);
          return UCS_ERR_TIMED_OUT;
        }
      idle (start, &nap);
    }
  lib.request_free (req);
  return st;
}

/* Closes ep's UCX endpoint at once, if still open, which ends the sends
   still in flight on it.  */
static void
force_close (pocl_remote_ucx_ep *ep)
{
  if (ep->ep == NULL)
    return;
  ucp_request_param_t rp;
  memset (&rp, 0, sizeof (rp));
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void *req = lib.ep_close_nbx (ep->ep, &rp);
  ep->ep = NULL;
  wait_request (ep->u, req, deadline_of (1000), NULL, NULL, NULL);
}

/* Fails ep and closes it under the sends in flight on it.  */
static void
close_under (pocl_remote_ucx_ep *ep)
{
  __atomic_store_n (&ep->failed, 1, __ATOMIC_RELEASE);
  if (ep->also_failed != NULL)
    __atomic_store_n (ep->also_failed, 1, __ATOMIC_RELEASE);
  force_close (ep);
}

static uint64_t
deadline_of (int timeout_ms)
{
  return timeout_ms < 0 ? 0 : now_ns () + (uint64_t)timeout_ms * 1000000u;
}

/* The registration holding [p, p + n), or NULL.  */
static ucp_mem_h
registered (pocl_remote_ucx *u, const void *p, size_t n)
{
  ucp_mem_h h = NULL;
  pthread_mutex_lock (&u->lock);
  for (unsigned i = 0; i < u->nreg && h == NULL; ++i)
    if ((const char *)p >= u->reg[i].base
        && (const char *)p + n <= u->reg[i].base + u->reg[i].len)
      h = u->reg[i].memh;
  pthread_mutex_unlock (&u->lock);
  return h;
}

static void
op_params (pocl_remote_ucx *u, ucp_request_param_t *rp, const void *p,
           size_t n)
{
  memset (rp, 0, sizeof (*rp));
  ucp_mem_h h = __atomic_load_n (&u->nreg, __ATOMIC_RELAXED)
                    ? registered (u, p, n)
                    : NULL;
  if (h != NULL)
    {
      rp->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      rp->memh = h;
    }
}

int
pocl_remote_ucx_send (pocl_remote_ucx_ep *ep, uint64_t tag, const void *p,
                      size_t n, int timeout_ms)
{
  if (pocl_remote_ucx_ep_failed (ep))
    return -1;
  ucp_request_param_t rp;
  op_params (ep->u, &rp, p, n);
  void *req = lib.tag_send_nbx (ep->ep, p, n, tag, &rp);
  ucs_status_t st
      = wait_request (ep->u, req, deadline_of (timeout_ms), NULL, ep, NULL);
  if (st != UCS_OK)
    {
      log_status ("send", st);
      return -1;
    }
  return 0;
}

int
pocl_remote_ucx_recv (pocl_remote_ucx *u, uint64_t tag, void *p, size_t n,
                      size_t *got, int timeout_ms)
{
  ucp_request_param_t rp;
  ucp_tag_recv_info_t info;
  memset (&info, 0, sizeof (info));
  op_params (u, &rp, p, n);
  rp.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
  rp.recv_info.tag_info = &info;
  void *req = lib.tag_recv_nbx (u->worker, p, n, tag, ~(ucp_tag_t)0, &rp);
  /* A receive completed at once has its length in info already.  */
  ucs_status_t st
      = wait_request (u, req, deadline_of (timeout_ms), &info, NULL, NULL);
  if (st != UCS_OK)
    {
      log_status ("receive", st);
      return -1;
    }
  *got = info.length;
  return 0;
}

/* Ends the requests of ring[first, last) (mod the ring), which may still
   be in flight: receives are cancelled; sends cannot be, so the endpoint
   is closed under them (it is failed anyway).  */
static void
end_requests (pocl_remote_ucx *u, pocl_remote_ucx_ep *ep, void **ring,
              uint64_t first, uint64_t last)
{
  if (ep != NULL && first < last)
    close_under (ep);
  const uint64_t until = now_ns () + UCX_END_WAIT_NS;
  for (uint64_t k = first; k < last; ++k)
    {
      void *req = ring[k % UCX_PIECES_IN_FLIGHT];
      if (req == NULL || UCS_PTR_IS_ERR (req))
        continue;
      if (ep == NULL)
        lib.request_cancel (u->worker, req);
      end_request (u, req, until);
    }
}

/* Both directions of the pieces: post up to UCX_PIECES_IN_FLIGHT, wait for
   the oldest, post the next.  `arrived`: the pieces' gap-free prefix.  */
static int
move_pieces (pocl_remote_ucx *u, pocl_remote_ucx_ep *ep, uint64_t secret,
             uint64_t seq, char *p, uint64_t n, uint64_t piece, int timeout_ms,
             const int *abort,
             void (*grown) (void *arg, uint64_t from, uint64_t to), void *arg,
             uint64_t *arrived)
{
  const uint64_t count = pocl_remote_ucx_pieces (n, piece);
  void *ring[UCX_PIECES_IN_FLIGHT];
  uint64_t posted = 0, done = 0;
  *arrived = 0;
  while (done < count)
    {
      while (posted < count && posted - done < UCX_PIECES_IN_FLIGHT)
        {
          uint64_t off = posted * piece,
                   len = n - off < piece ? n - off : piece;
          uint64_t tag = pocl_remote_ucx_tag (secret, seq + posted, 0);
          ucp_request_param_t rp;
          op_params (u, &rp, p + off, len);
          void *req;
          if (ep != NULL)
            req = lib.tag_send_nbx (ep->ep, p + off, len, tag, &rp);
          else
            req = lib.tag_recv_nbx (u->worker, p + off, len, tag,
                                    ~(ucp_tag_t)0, &rp);
          ring[posted++ % UCX_PIECES_IN_FLIGHT] = req;
          if (UCS_PTR_IS_ERR (req))
            break;
        }
      /* The oldest: no progress for timeout_ms ends them all.  */
      void *req = ring[done % UCX_PIECES_IN_FLIGHT];
      ucp_tag_recv_info_t info;
      ucs_status_t st = wait_request (
          u, req, deadline_of (timeout_ms),
          ep == NULL && req != NULL && !UCS_PTR_IS_ERR (req) ? &info : NULL,
          ep, abort);
      uint64_t off = done * piece, len = n - off < piece ? n - off : piece;
      if (st == UCS_OK && ep == NULL && req != NULL && info.length != len)
        st = UCS_ERR_MESSAGE_TRUNCATED;
      if (st != UCS_OK)
        {
          log_status (ep != NULL ? "send" : "receive", st);
          end_requests (u, ep, ring, done + 1, posted);
          return -1;
        }
      ++done;
      *arrived = off + len;
      if (grown != NULL)
        grown (arg, off, off + len);
    }
  return 0;
}

int
pocl_remote_ucx_send_pieces (pocl_remote_ucx_ep *ep, uint64_t secret,
                             uint64_t seq, const void *p, uint64_t n,
                             uint64_t piece, int timeout_ms, const int *abort)
{
  uint64_t arrived;
  if (pocl_remote_ucx_ep_failed (ep))
    return -1;
  return move_pieces (ep->u, ep, secret, seq, (char *)p, n, piece, timeout_ms,
                      abort, NULL, NULL, &arrived);
}

int
pocl_remote_ucx_recv_pieces (pocl_remote_ucx *u, uint64_t secret, uint64_t seq,
                             void *p, uint64_t n, uint64_t piece,
                             int timeout_ms, const int *abort,
                             void (*grown) (void *arg, uint64_t from,
                                            uint64_t to),
                             void *arg, uint64_t *arrived)
{
  return move_pieces (u, NULL, secret, seq, (char *)p, n, piece, timeout_ms,
                      abort, grown, arg, arrived);
}

int
pocl_remote_ucx_register (pocl_remote_ucx *u, void *p, size_t n)
{
  if (registered (u, p, n) != NULL)
    return 0;
  ucp_mem_map_params_t mp;
  memset (&mp, 0, sizeof (mp));
  mp.field_mask
      = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = p;
  mp.length = n;
  ucp_mem_h h = NULL;
  pthread_mutex_lock (&u->lock);
  int ok = u->nreg < UCX_REGISTERED_MAX
           && lib.mem_map (u->context, &mp, &h) == UCS_OK;
  if (ok)
    {
      u->reg[u->nreg].base = (char *)p;
      u->reg[u->nreg].len = n;
      u->reg[u->nreg].memh = h;
      ++u->nreg;
    }
  pthread_mutex_unlock (&u->lock);
  return ok ? 0 : -1;
}

void
pocl_remote_ucx_unregister (pocl_remote_ucx *u, void *p)
{
  pthread_mutex_lock (&u->lock);
  for (unsigned i = 0; i < u->nreg; ++i)
    if (u->reg[i].base == (char *)p)
      {
        lib.mem_unmap (u->context, u->reg[i].memh);
        u->reg[i] = u->reg[--u->nreg];
        break;
      }
  pthread_mutex_unlock (&u->lock);
}

void
pocl_remote_ucx_disconnect (pocl_remote_ucx_ep *ep)
{
  if (ep == NULL)
    return;
  force_close (ep);
  free (ep);
}
