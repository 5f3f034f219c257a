/* remote_usm_host.c - the host's access to USM device allocations of a
   remote CPU device (doc/device-info.md, "Unified shared memory").

   On a local CPU device a device allocation is host memory, and libraries
   rely on it: oneMKL, for one, computes a CPU queue's routines on the
   calling host, on the device pointers it is given.  A remote device's
   allocation lives on the server, so the client maps the range and serves
   it on demand with userfaultfd:

   - the first touch of a page faults to this file's thread, which reads
     the pages from the server (SVM_READ, a chunk at a time) and fills them
     in, keeping what it read;
   - before the next message to that server the pages are written back
     where they differ from what was read (SVM_WRITE) and dropped, so that
     the server's commands see the host's writes and the host's next touch
     reads the server's results.  The pages are write-protected while that
     happens: a thread writing meanwhile waits, and its write goes to the
     page read again, not into the one being dropped.

   So the host's view is the server's memory as it was at the touch, and
   what the host wrote reaches the server before any command or event
   status that the client sends after it.  Faults in the kernel's own
   accesses (a system call given such a pointer) are not served: the call
   fails with EFAULT.  Where userfaultfd is not available the range stays
   reserved, as for any other device.  */

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pocl_util.h"
#include "remote.h"
#include "utlist.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/* The most one fault reads from the server: a sequential reader pays a
   round trip per chunk.  */
#define HOST_CHUNK (256 * 1024)
/* The most one SVM_WRITE carries.  */
#define HOST_WRITE_MAX (4 * 1024 * 1024)

/* A page's state.  FILLING: being read from the server; STALE: a message
   went to the server meanwhile, which may have changed the page before
   the read's answer: read it again.  */
enum
{
  PAGE_ABSENT,
  PAGE_PRESENT,
  PAGE_FILLING,
  PAGE_STALE
};
/* A fault reads its pages again this often at most, then takes them.  */
#define FILL_TRIES 8

typedef struct usm_host_alloc
{
  char *addr;
  size_t size, span;
  remote_server *server;
  /* what the server held when each present page was read */
  char *seen;
  /* per page: PAGE_* */
  unsigned char *present;
  /* a fault reads its pages; freed meanwhile: `gone`, the fault frees */
  int filling, gone;
  struct usm_host_alloc *next;
} usm_host_alloc;

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static usm_host_alloc *host_allocs;
static unsigned host_count; /* atomic: entries of host_allocs */
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static int uffd = -1;
static size_t page;
/* Set while a thread sends for the pages themselves (the fault thread,
   a write-back): no write-back first.  A pthread key, not __thread (see
   remote_submit.c's reader key).  */
static pthread_key_t sending_key;

static void *host_fault_loop (void *arg);

static void
host_init (void)
{
  page = (size_t)sysconf (_SC_PAGESIZE);
  if (pthread_key_create (&sending_key, NULL) != 0)
    return;
  int fd = (int)syscall (SYS_userfaultfd,
                         O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
  if (fd < 0)
    {
      POCL_MSG_PRINT_MEMORY ("remote: no userfaultfd (%s): USM device "
                             "allocations are not host-accessible\n",
                             strerror (errno));
      return;
    }
  struct uffdio_api api;
  memset (&api, 0, sizeof (api));
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP;
  pthread_t t;
  if (ioctl (fd, UFFDIO_API, &api) != 0
      || !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)
      || pthread_create (&t, NULL, host_fault_loop, (void *)(intptr_t)fd)
             != 0)
    {
      POCL_MSG_PRINT_MEMORY ("remote: userfaultfd without write protection: "
                             "USM device allocations are not "
                             "host-accessible\n");
      close (fd);
      return;
    }
  pthread_detach (t);
  __atomic_store_n (&uffd, fd, __ATOMIC_RELEASE);
}

static usm_host_alloc *
find_host (const char *p)
{
  usm_host_alloc *a;
  LL_FOREACH (host_allocs, a)
  {
    if (p >= a->addr && p < a->addr + a->span)
      return a;
  }
  return NULL;
}

int
pocl_remote_usm_host_add (remote_server *s, void *addr, size_t size,
                          size_t span)
{
  pthread_once (&host_once, host_init);
  if (uffd < 0)
    return -1;
  usm_host_alloc *a = calloc (1, sizeof (*a));
  if (a == NULL)
    return -1;
  a->present = calloc (span / page, 1);
  a->seen = mmap (NULL, span, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  struct uffdio_register reg;
  memset (&reg, 0, sizeof (reg));
  reg.range.start = (uint64_t)(uintptr_t)addr;
  reg.range.len = span;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
  if (a->present == NULL || a->seen == MAP_FAILED
      || ioctl (uffd, UFFDIO_REGISTER, &reg) != 0)
    {
      POCL_MSG_PRINT_MEMORY ("remote: USM device allocation at %p is not "
                             "host-accessible (%s)\n",
                             addr, strerror (errno));
      if (a->seen != MAP_FAILED && a->seen != NULL)
        munmap (a->seen, span);
      free (a->present);
      free (a);
      return -1;
    }
  a->addr = addr;
  a->size = size;
  a->span = span;
  a->server = s;
  pthread_mutex_lock (&host_lock);
  LL_PREPEND (host_allocs, a);
  __atomic_fetch_add (&host_count, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock (&host_lock);
  return 0;
}

static void
free_host (usm_host_alloc *a)
{
  munmap (a->seen, a->span);
  free (a->present);
  free (a);
}

void
pocl_remote_usm_host_remove (void *addr)
{
  if (__atomic_load_n (&uffd, __ATOMIC_ACQUIRE) < 0)
    return;
  pthread_mutex_lock (&host_lock);
  usm_host_alloc *a = find_host (addr);
  if (a != NULL)
    {
      LL_DELETE (host_allocs, a);
      __atomic_fetch_sub (&host_count, 1, __ATOMIC_RELAXED);
      if (a->filling)
        {
          a->gone = 1;
          a = NULL;
        }
    }
  pthread_mutex_unlock (&host_lock);
  /* unmapping the range (the caller) unregisters it and wakes a thread
     still faulting there: its access then fails as any after a free  */
  if (a != NULL)
    free_host (a);
}

int
pocl_remote_usm_host_holds (const void *p, size_t n, const void *p2, size_t n2)
{
  if ((p == NULL && p2 == NULL)
      || __atomic_load_n (&host_count, __ATOMIC_RELAXED) == 0)
    return 0;
  const char *b = p, *e = b + n, *b2 = p2, *e2 = b2 + n2;
  int r = 0;
  usm_host_alloc *a;
  pthread_mutex_lock (&host_lock);
  LL_FOREACH (host_allocs, a)
  {
    r |= (p != NULL && b < a->addr + a->span && e > a->addr)
         || (p2 != NULL && b2 < a->addr + a->span && e2 > a->addr);
  }
  pthread_mutex_unlock (&host_lock);
  return r;
}

int
pocl_remote_usm_host_within (remote_server *s, const void *p, size_t n)
{
  if (__atomic_load_n (&host_count, __ATOMIC_RELAXED) == 0)
    return 0;
  pthread_mutex_lock (&host_lock);
  usm_host_alloc *a = find_host (p);
  int r = a != NULL && a->server == s && (const char *)p < a->addr + a->size
          && n <= (size_t)(a->addr + a->size - (const char *)p);
  pthread_mutex_unlock (&host_lock);
  return r;
}

/* Reads pages [first, first + n) of a from the server into what it keeps.
   Called without host_lock: a reader thread may wait for it to send.  */
static void
host_read (usm_host_alloc *a, size_t first, size_t n)
{
  char *at = a->addr + first * page;
  char *keep = a->seen + first * page;
  size_t len = n * page;
  size_t have = first * page < a->size ? a->size - first * page : 0;
  pocl_remote_svm_sync req
      = { (uint64_t)(uintptr_t)at, have < len ? have : len };
  void *reply = NULL;
  uint64_t got = 0;
  cl_int err = CL_SUCCESS;
  if (req.size > 0)
    err = pocl_remote_request (a->server, POCL_RMSG_SVM_READ, &req,
                               sizeof (req), NULL, 0, &reply, &got);
  if (err != CL_SUCCESS || got != req.size)
    {
      /* the faulting thread must go on: it reads zeros */
      POCL_MSG_ERR ("remote: reading USM device memory at %p for the host "
                    "failed (%d)\n",
                    at, err);
      got = 0;
    }
  memcpy (keep, reply, got);
  memset (keep + got, 0, len - got);
  free (reply);
}

/* Serves a fault at page i of a: reads the absent pages from i on, up to
   a chunk, and fills them in.  Called with host_lock, which it leaves
   while the server answers.  */
static void
host_fill (usm_host_alloc *a, size_t i)
{
  size_t n = a->span / page, j, tries;
  for (tries = 1;; ++tries)
    {
      for (j = i;
           j < n && j - i < HOST_CHUNK / page && a->present[j] == PAGE_ABSENT;
           ++j)
        a->present[j] = PAGE_FILLING;
      __atomic_store_n (&a->server->host_copies, 1, __ATOMIC_RELEASE);
      a->filling = 1;
      pthread_mutex_unlock (&host_lock);
      host_read (a, i, j - i);
      pthread_mutex_lock (&host_lock);
      a->filling = 0;
      if (a->gone)
        {
          free_host (a);
          return;
        }
      size_t k, stale = 0;
      for (k = i; k < j; ++k)
        stale += a->present[k] == PAGE_STALE;
      if (stale == 0 || tries == FILL_TRIES)
        break;
      memset (a->present + i, PAGE_ABSENT, j - i);
    }
  /* all at once; page by page where one is there already */
  size_t k = i, step = j - i;
  while (k < j)
    {
      struct uffdio_copy cp;
      memset (&cp, 0, sizeof (cp));
      cp.dst = (uint64_t)(uintptr_t)(a->addr + k * page);
      cp.src = (uint64_t)(uintptr_t)(a->seen + k * page);
      cp.len = step * page;
      if (ioctl (uffd, UFFDIO_COPY, &cp) == 0 || step == 1)
        k += step;
      else
        step = 1;
    }
  memset (a->present + i, PAGE_PRESENT, j - i);
  __atomic_store_n (&a->server->host_copies, 1, __ATOMIC_RELEASE);
}

static void
host_fault (char *addr, int wp)
{
  pthread_mutex_lock (&host_lock);
  usm_host_alloc *a = find_host (addr);
  if (a == NULL)
    {
      pthread_mutex_unlock (&host_lock);
      return;
    }
  size_t i = (size_t)(addr - a->addr) / page;
  if (a->present[i] == PAGE_PRESENT)
    {
      /* filled in since: a write that waited for a write-back, or a
         second fault on the page  */
      struct uffdio_writeprotect wpr;
      memset (&wpr, 0, sizeof (wpr));
      wpr.range.start = (uint64_t)(uintptr_t)(a->addr + i * page);
      wpr.range.len = page;
      if (wp)
        ioctl (uffd, UFFDIO_WRITEPROTECT, &wpr);
      else
        ioctl (uffd, UFFDIO_WAKE, &wpr.range);
    }
  else
    host_fill (a, i);
  pthread_mutex_unlock (&host_lock);
}

static void *
host_fault_loop (void *arg)
{
  /* the descriptor comes as the argument: `uffd` is set after this starts */
  int fd = (int)(intptr_t)arg;
  pthread_setspecific (sending_key, (void *)1);
  for (;;)
    {
      struct pollfd p = { fd, POLLIN, 0 };
      if (poll (&p, 1, -1) < 0 && errno != EINTR)
        return NULL;
      struct uffd_msg msg;
      ssize_t r = read (fd, &msg, sizeof (msg));
      if (r != (ssize_t)sizeof (msg) || msg.event != UFFD_EVENT_PAGEFAULT)
        continue;
      host_fault ((char *)(uintptr_t)(msg.arg.pagefault.address
                                      & ~(uint64_t)(page - 1)),
                  (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) != 0);
    }
  return NULL;
}

/* The first and one past the last byte of the page at `at` that differ
   from what was read: first == end when none does.  */
static void
page_changes (const char *at, const char *seen, size_t *first, size_t *end)
{
  size_t b = 0, e = page;
  while (b < page && at[b] == seen[b])
    ++b;
  while (e > b && at[e - 1] == seen[e - 1])
    --e;
  *first = b;
  *end = e;
}

static void
host_write (usm_host_alloc *a, char *at, size_t len)
{
  while (len > 0)
    {
      size_t n = len < HOST_WRITE_MAX ? len : HOST_WRITE_MAX;
      pocl_remote_svm_sync w = { (uint64_t)(uintptr_t)at, n };
      struct iovec iov = { at, n };
      pocl_remote_send (a->server, 0, POCL_RMSG_SVM_WRITE, 0, &w, sizeof (w),
                        &iov, 1);
      at += n;
      len -= n;
    }
}

/* Writes back and drops the present pages [first, first + n) of a.
   Called with host_lock.  */
static void
host_put_back (usm_host_alloc *a, size_t first, size_t n)
{
  struct uffdio_writeprotect wpr;
  memset (&wpr, 0, sizeof (wpr));
  wpr.range.start = (uint64_t)(uintptr_t)(a->addr + first * page);
  wpr.range.len = n * page;
  wpr.mode = UFFDIO_WRITEPROTECT_MODE_WP;
  ioctl (uffd, UFFDIO_WRITEPROTECT, &wpr);
  /* runs of changed bytes, within the allocation; a run continues across
     pages whose changes touch */
  char *run = NULL, *run_end = NULL;
  size_t i;
  for (i = first; i < first + n; ++i)
    {
      size_t b, e;
      char *at = a->addr + i * page;
      page_changes (at, a->seen + i * page, &b, &e);
      if (b == e)
        continue;
      if (run != NULL && run_end == at + b)
        run_end = at + e;
      else
        {
          if (run != NULL)
            host_write (a, run, (size_t)(run_end - run));
          run = at + b;
          run_end = at + e;
        }
    }
  if (run != NULL)
    {
      if (run_end > a->addr + a->size)
        run_end = a->addr + a->size;
      if (run_end > run)
        host_write (a, run, (size_t)(run_end - run));
    }
  madvise (a->addr + first * page, n * page, MADV_DONTNEED);
  /* a write that faulted meanwhile is woken when its page is read again */
  wpr.mode = UFFDIO_WRITEPROTECT_MODE_DONTWAKE;
  ioctl (uffd, UFFDIO_WRITEPROTECT, &wpr);
  memset (a->present + first, PAGE_ABSENT, n);
}

void
pocl_remote_usm_host_flush (remote_server *s)
{
  if (__atomic_load_n (&uffd, __ATOMIC_ACQUIRE) < 0
      || pthread_getspecific (sending_key) != NULL)
    return;
  pthread_setspecific (sending_key, (void *)1);
  pthread_mutex_lock (&host_lock);
  int left = 0;
  usm_host_alloc *a;
  LL_FOREACH (host_allocs, a)
  {
    size_t i = 0, n = a->span / page;
    while (a->server == s && i < n)
      {
        size_t j;
        for (; i < n && a->present[i] != PAGE_PRESENT; ++i)
          if (a->present[i] >= PAGE_FILLING)
            {
              a->present[i] = PAGE_STALE;
              left = 1;
            }
        for (j = i; j < n && a->present[j] == PAGE_PRESENT; ++j)
          ;
        if (j > i)
          host_put_back (a, i, j - i);
        i = j;
      }
  }
  /* cleared only now: a message sent meanwhile by another thread waited
     for the lock, after these write-backs */
  __atomic_store_n (&s->host_copies, left, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&host_lock);
  pthread_setspecific (sending_key, NULL);
}
