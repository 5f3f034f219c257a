/* remote_svm.c - shared virtual memory and unified shared memory on
   remote devices (doc/protocol.md, "SVM" and "Unified shared memory").
   The server allocates natively and names the address; the host copy is
   mapped at the same address here, so that pointers stored in SVM memory
   mean the same on both sides.  USM host and shared allocations are kept
   as fine-grained ones; a USM device allocation is the server's alone (its
   range only reserved here, or served to the host on demand for a CPU
   device: remote_usm_host.c), as coarse-grained memory never mapped.
   Coarse-grained allocations are the server's between maps: a map reads
   the region into the host copy, an unmap writes back what was mapped for
   writing.  Fine-grained ones are the host copy's between kernels: every
   kernel launched while some exist carries all of its session's
   fine-grained allocations to the server and brings them back with its
   completion (the specification promises consistency at synchronization
   points only; the kernel's SVM arguments alone would miss pointers passed
   by clSetKernelExecInfo, which PoCL's core does not keep).  One freed
   meanwhile, on another thread, goes when the launches carrying it end.  */

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pocl_util.h"
#include "remote.h"
#include "utlist.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* Server addresses taken here already: asked again this often.  */
#define SVM_ALLOC_TRIES 4

typedef struct remote_svm_map
{
  char *ptr;
  size_t size;
  cl_map_flags flags;
  struct remote_svm_map *next;
} remote_svm_map;

typedef struct remote_svm_alloc
{
  char *addr;
  size_t size, span;
  int fine;
  remote_server *server;
  remote_svm_map *maps; /* coarse: open maps, newest first */
  /* launches in flight that carry it: freed, it stays until they end,
     since their completions write into it, and the server's queue reads
     and writes it until then */
  unsigned packing;
  int freed;
  struct remote_svm_alloc *next;
} remote_svm_alloc;

/* What a command leaves to do on the host when it completes.  */
enum
{
  SVM_OP_SCATTER, /* a kernel's fine-grained regions came back */
  SVM_OP_COPY,    /* host memory to host memory */
  SVM_OP_FILL,
  SVM_OP_FREE /* clEnqueueSVMFree */
};
struct remote_svm_op
{
  int kind;
  size_t size;
  char *dst;
  const char *src;
  char pattern[POCL_REMOTE_MAX_FILL_PATTERN];
  size_t pattern_size;
  uint64_t count;
  pocl_remote_svm_sync *regions; /* SCATTER */
  struct remote_svm_alloc **held; /* SCATTER: the regions' allocations */
  char *staging;
  /* SCATTER: the launch's payload, whose regions' bytes are what the
     kernel started from */
  char *sent;
  size_t sent_table;
  _cl_command_svm_free free_cmd; /* FREE: svm_pointers copied */
  cl_context context;
};

static pthread_mutex_t svm_lock = PTHREAD_MUTEX_INITIALIZER;
static remote_svm_alloc *svm_allocs;
/* freed while launches that carry them are in flight */
static remote_svm_alloc *svm_dying;
/* live fine-grained allocations, all sessions: read on every launch */
unsigned pocl_remote_svm_fine;

static size_t
page_round (size_t n)
{
  size_t page = (size_t)sysconf (_SC_PAGESIZE);
  return (n + page - 1) & ~(page - 1);
}

/* The allocation holding [p, p + n), or NULL.  Called with svm_lock.  */
static remote_svm_alloc *
find_alloc (const void *p, size_t n)
{
  remote_svm_alloc *a;
  LL_FOREACH (svm_allocs, a)
  {
    if ((const char *)p >= a->addr && (const char *)p < a->addr + a->span
        && n <= (size_t)(a->addr + a->span - (const char *)p))
      return a;
  }
  return NULL;
}

/* Whether [p, p + n) is in a coarse-grained allocation: the server holds
   its bytes.  Fine-grained memory counts as host memory.  */
static int
on_server (const void *p, size_t n)
{
  pthread_mutex_lock (&svm_lock);
  remote_svm_alloc *a = find_alloc (p, n);
  int r = a != NULL && !a->fine;
  pthread_mutex_unlock (&svm_lock);
  return r;
}

int
pocl_remote_svm_holds (remote_server *s, const void *p, size_t n)
{
  pthread_mutex_lock (&svm_lock);
  remote_svm_alloc *a = find_alloc (p, n);
  int r = a != NULL && a->server == s;
  pthread_mutex_unlock (&svm_lock);
  return r;
}

/* The most a kernel's COMPLETION brings back for `total` bytes of
   fine-grained regions: runs of changed bytes, each {offset, length} and
   the bytes, then {0, 0} (pocld's svm_changes), and one byte more than
   that, since a payload that fills dst_size would be taken as complete.  */
static size_t
changes_max (size_t total)
{
  return 2 * total + 64 + 1;
}

int
pocl_remote_create_buffer_on (remote_server *s, cl_device_id dev, cl_mem mem,
                              cl_mem_flags access)
{
  pocl_remote_create_buffer cb;
  memset (&cb, 0, sizeof (cb));
  cb.mem_id = pocl_remote_wire_id (mem->id, dev);
  cb.flags = access;
  cb.size = mem->size;
  cb.device = ((remote_device_data *)dev->data)->server_device;
  int on_svm = (mem->flags & CL_MEM_USE_HOST_PTR)
               && pocl_remote_svm_holds (s, mem->mem_host_ptr, mem->size);
  uint64_t addr = (uint64_t)(uintptr_t)mem->mem_host_ptr;
  struct iovec iov = { &addr, sizeof (addr) };
  if (on_svm)
    cb.flags |= CL_MEM_USE_HOST_PTR;
  pocl_remote_request_async (s, POCL_RMSG_CREATE_BUFFER, &cb, sizeof (cb),
                             &iov, on_svm);
  return on_svm;
}

static void
server_free (remote_server *s, uint64_t addr)
{
  pocl_remote_release rel = { addr };
  /* no reply comes: not a request, which would wait in the table */
  pocl_remote_send (s, 0, POCL_RMSG_SVM_FREE, 0, &rel, sizeof (rel), NULL, 0);
}

/* An allocation of `kind` (POCL_REMOTE_ALLOC_*) with the server's flags
   for it.  The host copy of a USM device allocation is an address range
   kept reserved, never touched (a CPU device's: served on demand): its one
   copy is the server's.  */
static void *
alloc_kind (cl_device_id dev, uint32_t kind, uint64_t flags, size_t size)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  remote_server *s = __atomic_load_n (&d->server, __ATOMIC_ACQUIRE);
  pocl_remote_svm_alloc req;
  uint64_t taken[SVM_ALLOC_TRIES];
  unsigned ntaken = 0, i;
  size_t span = page_round (size);
  void *got = NULL;

  remote_svm_alloc *a = calloc (1, sizeof (remote_svm_alloc));
  if (a == NULL)
    return NULL;
  memset (&req, 0, sizeof (req));
  req.size = size;
  req.flags = flags;
  req.device = d->server_device;
  req.kind = kind;
  int reserve = kind == POCL_REMOTE_ALLOC_USM_DEVICE;
  /* host code reaches a CPU device's memory (remote_usm_host.c) */
  int hosted = reserve && (dev->type & CL_DEVICE_TYPE_CPU);
  while (got == NULL && ntaken < SVM_ALLOC_TRIES)
    {
      void *reply = NULL;
      uint64_t reply_size = 0, addr;
      cl_int err
          = pocl_remote_request (s, POCL_RMSG_SVM_ALLOC, &req, sizeof (req),
                                 NULL, 0, &reply, &reply_size);
      if (err != CL_SUCCESS || reply_size != sizeof (addr))
        {
          free (reply);
          POCL_MSG_ERR ("remote: the server allocated no SVM (%d)\n", err);
          break;
        }
      memcpy (&addr, reply, sizeof (addr));
      free (reply);
      void *p = mmap ((void *)(uintptr_t)addr, span,
                      reserve && !hosted ? PROT_NONE
                                         : PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE
                          | (reserve ? MAP_NORESERVE : 0),
                      -1, 0);
      if (p == (void *)(uintptr_t)addr)
        got = p;
      else
        {
          /* kept until the server gives another address */
          if (p != MAP_FAILED)
            munmap (p, span);
          POCL_MSG_PRINT_MEMORY (
              "remote: SVM address %#" PRIx64 " is taken here\n", addr);
          taken[ntaken++] = addr;
        }
    }
  for (i = 0; i < ntaken; ++i)
    server_free (s, taken[i]);
  if (got == NULL)
    {
      free (a);
      return NULL;
    }
  if (hosted && pocl_remote_usm_host_add (s, got, size, span) != 0)
    mprotect (got, span, PROT_NONE);
  a->addr = got;
  a->size = size;
  a->span = span;
  /* USM host and shared allocations are the host copy's between kernels,
     as fine-grained SVM is, whatever the server's memory is  */
  a->fine = kind == POCL_REMOTE_ALLOC_SVM
                ? (flags & CL_MEM_SVM_FINE_GRAIN_BUFFER) != 0
                : !reserve;
  a->server = s;
  pthread_mutex_lock (&svm_lock);
  LL_PREPEND (svm_allocs, a);
  if (a->fine)
    __atomic_fetch_add (&pocl_remote_svm_fine, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock (&svm_lock);
  return got;
}

static void *
remote_svm_alloc_op (cl_device_id dev, cl_svm_mem_flags flags, size_t size)
{
  return alloc_kind (dev, POCL_REMOTE_ALLOC_SVM,
                     flags
                         & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY
                            | CL_MEM_WRITE_ONLY
                            | CL_MEM_SVM_FINE_GRAIN_BUFFER),
                     size);
}

static void *
remote_usm_alloc_op (cl_device_id dev,
                     cl_unified_shared_memory_type_intel kind,
                     cl_mem_alloc_flags_intel flags, size_t size)
{
  uint32_t k = kind == CL_MEM_TYPE_HOST_INTEL     ? POCL_REMOTE_ALLOC_USM_HOST
               : kind == CL_MEM_TYPE_DEVICE_INTEL ? POCL_REMOTE_ALLOC_USM_DEVICE
                                                  : POCL_REMOTE_ALLOC_USM_SHARED;
  return alloc_kind (dev, k, flags, size);
}

static void
release_alloc (remote_svm_alloc *a)
{
  munmap (a->addr, a->span);
  server_free (a->server, (uint64_t)(uintptr_t)a->addr);
  remote_svm_map *m, *t;
  LL_FOREACH_SAFE (a->maps, m, t) { free (m); }
  free (a);
}

static void
remote_svm_free_op (cl_device_id dev, void *ptr)
{
  (void)dev;
  int later = 0;
  pthread_mutex_lock (&svm_lock);
  remote_svm_alloc *a = find_alloc (ptr, 0);
  if (a != NULL && a->addr == ptr)
    {
      LL_DELETE (svm_allocs, a);
      if (a->fine)
        __atomic_fetch_sub (&pocl_remote_svm_fine, 1, __ATOMIC_RELAXED);
      later = a->packing > 0;
      if (later)
        {
          a->freed = 1;
          LL_PREPEND (svm_dying, a);
        }
    }
  else
    a = NULL;
  pthread_mutex_unlock (&svm_lock);
  if (a == NULL)
    return;
  pocl_remote_usm_host_remove (ptr);
  if (!later)
    release_alloc (a);
}

void
pocl_remote_svm_setup (cl_device_id dev)
{
  cl_device_svm_capabilities server = 0;
  pocl_remote_server_info (dev, CL_DEVICE_SVM_CAPABILITIES, sizeof (server),
                          &server, NULL);
  /* never atomics: host and server copies are not one memory */
  dev->svm_caps = 0;
  if (server & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)
    dev->svm_caps = CL_DEVICE_SVM_COARSE_GRAIN_BUFFER
                    | (server & CL_DEVICE_SVM_FINE_GRAIN_BUFFER);
  dev->svm_allocation_priority = dev->svm_caps ? 1 : 0;
}

void
pocl_remote_init_svm_ops (struct pocl_device_ops *ops)
{
  ops->svm_alloc = remote_svm_alloc_op;
  ops->svm_free = remote_svm_free_op;
  ops->usm_alloc = remote_usm_alloc_op;
  ops->usm_free = remote_svm_free_op;
}

/* A launch that carried `held` ended (or was never sent): the allocations
   freed meanwhile go now.  */
static void
unpack (remote_svm_alloc **held, uint64_t n)
{
  remote_svm_alloc *gone = NULL, *a, *t;
  uint64_t i;
  pthread_mutex_lock (&svm_lock);
  for (i = 0; i < n; ++i)
    {
      a = held[i];
      if (--a->packing == 0 && a->freed)
        {
          LL_DELETE (svm_dying, a);
          LL_PREPEND (gone, a);
        }
    }
  pthread_mutex_unlock (&svm_lock);
  LL_FOREACH_SAFE (gone, a, t) { release_alloc (a); }
}

/* The launch carries every fine-grained allocation of its session, packed
   after the arguments (the replay log copies a payload anyway); the
   completion brings them back into a staging, scattered by
   pocl_remote_svm_done.  iov2: the waits and the arguments.  */
int
pocl_remote_svm_send_ndrange (remote_server *s, remote_event *re,
                              pocl_remote_ndrange *b, struct iovec *iov2)
{
  uint64_t n = 0, total = 0, i = 0;
  remote_svm_alloc *a;
  char *packed = NULL;
  struct remote_svm_op *op = calloc (1, sizeof (*op));
  if (op == NULL)
    return -1;
  pthread_mutex_lock (&svm_lock);
  LL_FOREACH (svm_allocs, a)
  {
    if (a->fine && a->server == s)
      {
        ++n;
        total += a->size;
      }
  }
  size_t table = (n + 1) * sizeof (pocl_remote_svm_sync);
  if (n > 0)
    {
      packed = malloc (table + total);
      /* the regions, then their allocations */
      op->regions = malloc (n * (sizeof (pocl_remote_svm_sync)
                                 + sizeof (remote_svm_alloc *)));
      if (op->regions != NULL)
        op->held = (remote_svm_alloc **)(op->regions + n);
      op->staging = malloc (changes_max (total));
    }
  if (packed != NULL && op->regions != NULL && op->staging != NULL)
    {
      pocl_remote_svm_sync head = { n, total };
      char *d = packed + table;
      memcpy (packed, &head, sizeof (head));
      LL_FOREACH (svm_allocs, a)
      {
        if (!a->fine || a->server != s)
          continue;
        op->regions[i].address = (uint64_t)(uintptr_t)a->addr;
        op->regions[i].size = a->size;
        memcpy (d, a->addr, a->size);
        d += a->size;
        ++a->packing;
        op->held[i++] = a;
      }
      memcpy (packed + sizeof (head), op->regions,
              n * sizeof (pocl_remote_svm_sync));
    }
  pthread_mutex_unlock (&svm_lock);
  if (n == 0)
    {
      free (op);
      return pocl_remote_send (s, 0, POCL_RMSG_NDRANGE, re->inflight.id, b,
                               sizeof (*b), iov2, 2);
    }
  if (i != n)
    {
      free (packed);
      free (op->regions);
      free (op->staging);
      free (op);
      return -1;
    }
  op->kind = SVM_OP_SCATTER;
  op->count = n;
  op->size = total;
  re->inflight.dst = op->staging;
  re->inflight.dst_size = changes_max (total);
  re->inflight.partial = 1;
  re->svm = op;
  b->cmd.flags |= POCL_RCMD_SVM;
  op->sent = packed;
  op->sent_table = table;
  struct iovec iov[3] = { iov2[0], iov2[1], { packed, table + total } };
  return pocl_remote_send (s, 0, POCL_RMSG_NDRANGE, re->inflight.id, b,
                           sizeof (*b), iov, 3);
}

static int
send_host_op (remote_server *s, remote_event *re, pocl_remote_cmd *c,
              struct iovec *waits, struct remote_svm_op *op)
{
  if (op == NULL)
    return -1;
  re->svm = op;
  return pocl_remote_send_marker (s, re, c, waits, 0);
}

int
pocl_remote_svm_command (remote_server *s, _cl_command_node *node,
                         remote_event *re, pocl_remote_mem_cmd *m,
                         struct iovec *waits)
{
  _cl_command_t *cmd = &node->command;
  struct remote_svm_op *op;
  m->cmd.flags |= POCL_RCMD_SVM;
  switch (node->type)
    {
    case CL_COMMAND_SVM_MAP:
      {
        char *p = cmd->svm_map.svm_ptr;
        size_t n = cmd->svm_map.size;
        remote_svm_map *mp = NULL;
        pthread_mutex_lock (&svm_lock);
        remote_svm_alloc *a = find_alloc (p, n);
        if (a != NULL && !a->fine && (mp = malloc (sizeof (*mp))) != NULL)
          {
            mp->ptr = p;
            mp->size = n;
            mp->flags = cmd->svm_map.flags;
            LL_PREPEND (a->maps, mp);
          }
        pthread_mutex_unlock (&svm_lock);
        if (mp == NULL || (mp->flags & CL_MAP_WRITE_INVALIDATE_REGION))
          return pocl_remote_send_marker (s, re, &m->cmd, waits, 0);
        m->src_id = (uint64_t)(uintptr_t)p;
        m->region[0] = m->data_size = n;
        re->inflight.dst = p;
        re->inflight.dst_size = n;
        return pocl_remote_send (s, 0, POCL_RMSG_READ, re->inflight.id, m,
                                 sizeof (*m), waits, 1);
      }
    case CL_COMMAND_SVM_UNMAP:
      {
        char *p = cmd->svm_unmap.svm_ptr;
        remote_svm_map *mp = NULL;
        pthread_mutex_lock (&svm_lock);
        remote_svm_alloc *a = find_alloc (p, 0);
        if (a != NULL)
          LL_FOREACH (a->maps, mp)
          {
            if (mp->ptr == p)
              {
                LL_DELETE (a->maps, mp);
                break;
              }
          }
        pthread_mutex_unlock (&svm_lock);
        int write
            = mp != NULL
              && (mp->flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION));
        size_t n = mp ? mp->size : 0;
        free (mp);
        if (!write)
          return pocl_remote_send_marker (s, re, &m->cmd, waits, 0);
        m->dst_id = (uint64_t)(uintptr_t)p;
        m->region[0] = m->data_size = n;
        return pocl_remote_send_mem (s, POCL_RMSG_WRITE, re, m, waits, p, n,
                                     0);
      }
    case CL_COMMAND_SVM_MEMCPY:
      {
        _cl_command_svm_cpy *c = &cmd->svm_memcpy;
        int dst_s = on_server (c->dst, c->size);
        int src_s = on_server (c->src, c->size);
        m->src_id = (uint64_t)(uintptr_t)c->src;
        m->dst_id = (uint64_t)(uintptr_t)c->dst;
        m->region[0] = c->size;
        if (dst_s && src_s)
          return pocl_remote_send (s, 0, POCL_RMSG_COPY, re->inflight.id, m,
                                   sizeof (*m), waits, 1);
        if (dst_s)
          {
            m->src_id = 0;
            m->data_size = c->size;
            return pocl_remote_send_mem (s, POCL_RMSG_WRITE, re, m, waits,
                                         c->src, c->size, 0);
          }
        if (src_s)
          {
            m->dst_id = 0;
            m->data_size = c->size;
            re->inflight.dst = c->dst;
            re->inflight.dst_size = c->size;
            return pocl_remote_send (s, 0, POCL_RMSG_READ, re->inflight.id, m,
                                     sizeof (*m), waits, 1);
          }
        op = calloc (1, sizeof (*op));
        if (op != NULL)
          {
            op->kind = SVM_OP_COPY;
            op->dst = c->dst;
            op->src = c->src;
            op->size = c->size;
          }
        return send_host_op (s, re, &m->cmd, waits, op);
      }
    case CL_COMMAND_SVM_MEMFILL:
      {
        _cl_command_svm_fill *f = &cmd->svm_fill;
        if (f->pattern_size > POCL_REMOTE_MAX_FILL_PATTERN)
          return -2;
        if (on_server (f->svm_ptr, f->size))
          {
            m->dst_id = (uint64_t)(uintptr_t)f->svm_ptr;
            m->region[0] = f->size;
            m->data_size = f->pattern_size;
            return pocl_remote_send_mem (s, POCL_RMSG_FILL, re, m, waits,
                                         f->pattern, f->pattern_size, 1);
          }
        op = calloc (1, sizeof (*op));
        if (op != NULL)
          {
            op->kind = SVM_OP_FILL;
            op->dst = f->svm_ptr;
            op->size = f->size;
            op->pattern_size = f->pattern_size;
            memcpy (op->pattern, f->pattern, f->pattern_size);
          }
        return send_host_op (s, re, &m->cmd, waits, op);
      }
    case CL_COMMAND_SVM_FREE:
      {
        _cl_command_svm_free *f = &cmd->svm_free;
        op = calloc (1, sizeof (*op));
        if (op != NULL)
          {
            op->kind = SVM_OP_FREE;
            op->free_cmd = *f;
            op->context = node->sync.event.event->context;
            op->free_cmd.svm_pointers
                = malloc (f->num_svm_pointers * sizeof (void *) + 1);
            if (op->free_cmd.svm_pointers == NULL)
              {
                free (op);
                op = NULL;
              }
            else
              memcpy (op->free_cmd.svm_pointers, f->svm_pointers,
                      f->num_svm_pointers * sizeof (void *));
          }
        return send_host_op (s, re, &m->cmd, waits, op);
      }
    default: /* CL_COMMAND_SVM_MIGRATE_MEM: the server's copy is the one */
      return pocl_remote_send_marker (s, re, &m->cmd, waits, 0);
    }
}

/* clEnqueueSVMFree without a callback: clSVMFree (patch 0140 exports it
   for this).  */
static void
free_pointers (struct remote_svm_op *op)
{
  cl_context ctx = op->context;
  unsigned i;
  for (i = 0; i < op->free_cmd.num_svm_pointers; ++i)
    POname (clSVMFree) (ctx, op->free_cmd.svm_pointers[i]);
}

/* Copies [from, from + n) of a run into the host copy at dst, byte by byte
   only where the kernel changed it: pocld merges runs a few bytes apart, and
   the host may have written the bytes between them meanwhile (fine-grained
   SVM is byte-granular: OpenCL-CTS test_svm svm_byte_granularity).  */
static void
merge_run (char *dst, const char *from, const char *started, uint64_t n)
{
  uint64_t k = 0, run;
  while (k < n)
    {
      for (; k < n && from[k] == started[k]; ++k)
        ;
      for (run = k; run < n && from[run] != started[run]; ++run)
        ;
      memcpy (dst + k, from + k, run - k);
      k = run;
    }
}

/* Copies the runs of bytes a kernel changed into the host copies: offsets
   count through the regions one after the other.  The host's own writes
   to other bytes meanwhile stand.  */
static void
apply_changes (struct remote_svm_op *op)
{
  size_t at = 0, cap = changes_max (op->size);
  for (;;)
    {
      uint64_t h[2];
      if (at + sizeof (h) > cap)
        break;
      memcpy (h, op->staging + at, sizeof (h));
      at += sizeof (h);
      if (h[1] == 0 || h[0] > op->size || h[1] > op->size - h[0]
          || h[1] > cap - at)
        break;
      uint64_t off = h[0], len = h[1], base = 0, i;
      for (i = 0; i < op->count && len > 0; ++i)
        {
          uint64_t rs = op->regions[i].size;
          if (off < base + rs)
            {
              uint64_t n = base + rs - off < len ? base + rs - off : len;
              merge_run ((char *)(uintptr_t)op->regions[i].address
                             + (off - base),
                         op->staging + at + (off - h[0]),
                         op->sent + op->sent_table + off, n);
              off += n;
              len -= n;
            }
          base += rs;
        }
      at += h[1];
    }
}

void
pocl_remote_svm_done (remote_event *re, cl_int status)
{
  struct remote_svm_op *op = re->svm;
  size_t off;
  re->svm = NULL;
  if (status == CL_COMPLETE)
    switch (op->kind)
      {
      case SVM_OP_SCATTER:
        apply_changes (op);
        break;
      case SVM_OP_COPY:
        memmove (op->dst, op->src, op->size);
        break;
      case SVM_OP_FILL:
        for (off = 0; off + op->pattern_size <= op->size;
             off += op->pattern_size)
          memcpy (op->dst + off, op->pattern, op->pattern_size);
        break;
      case SVM_OP_FREE:
        if (op->free_cmd.pfn_free_func)
          op->free_cmd.pfn_free_func (
              op->free_cmd.queue, op->free_cmd.num_svm_pointers,
              op->free_cmd.svm_pointers, op->free_cmd.data);
        else
          free_pointers (op);
        break;
      }
  if (op->kind == SVM_OP_SCATTER)
    {
      re->inflight.dst = NULL;
      unpack (op->held, op->count);
    }
  free (op->regions);
  free (op->staging);
  free (op->sent);
  free (op->free_cmd.svm_pointers);
  free (op);
}
