/* test_hostile_mem.c - memory requests no OpenCL client sends, spoken on
   the wire (raw_client.c) to the pocld fixture: each gets an error for its
   command, and the session goes on serving (doc/security.md).

   - NDRANGE buffer arguments at offsets that make no sub-buffer: not
     aligned, at or past the buffer's end, near 2^64; then one that does,
     whose kernel writes land at that offset;
   - SVM pointers outside the session's SVM allocations: kernel arguments,
     reads, fine-grained regions around a kernel;
   - SVM_ALLOC of an unknown kind, or of a USM kind with unknown flags;
   - SVM_READ and SVM_WRITE outside the allocation or of the wrong size;
   - KERNEL_INFO of an unknown kernel or kind, or with short input;
   - READ_IMAGE and WRITE_IMAGE (inline bytes and on the data socket) whose
     data size does not match their region: CL_INVALID_VALUE, where pocld
     closed the session before.

   - command buffers (CMDBUF_CREATE) naming a buffer or kernel the session
     does not have, or a fill beyond its buffer: an error in the REPLY;
     CMDBUF_RUN of a buffer that does not exist: CL_INVALID_COMMAND_BUFFER_KHR;
     a good one runs; one whose command waits for itself ends its session
     (a protocol violation), not the server.

   Usage (through run_remote.sh, which names the fixture's port in
   POCL_REMOTE0_PARAMETERS): test_hostile_mem  */

#define TEST_NAME "hostile_mem"
#include "remote_test_util.c"

#include "raw_client.c"

#include <CL/cl_ext.h>

static const char source[]
    = "__kernel void seven (__global uint *p)\n"
      "{ p[get_global_id (0)] = 7u; }\n";

/* A command's COMPLETION status.  */
static int32_t
completes (raw_session *s, uint32_t type, const void *body, uint32_t bsize,
           const void *payload, uint64_t psize, const char *what)
{
  int32_t st = 0;
  if (raw_command (s, type, body, bsize, payload, psize, &st, NULL, NULL))
    fail ("%s: pocld closed the connection", what);
  return st;
}

/* A one-argument NDRANGE of kernel 0x300 on queue 1: its argument's kind,
   a and b.  */
static int32_t
ndrange_with (raw_session *s, uint32_t kind, uint64_t a, uint64_t b,
              const char *what)
{
  struct
  {
    pocl_remote_ndrange nd;
    pocl_remote_arg arg;
  } m;
  memset (&m, 0, sizeof (m));
  m.nd.cmd.queue_id = 1;
  m.nd.kernel_id = 0x300;
  m.nd.work_dim = 1;
  m.nd.num_args = 1;
  m.nd.global[0] = 16;
  m.nd.global[1] = m.nd.global[2] = 1;
  m.nd.args_size = sizeof (m.arg);
  m.arg.kind = kind;
  m.arg.a = a;
  m.arg.b = b;
  return completes (s, POCL_RMSG_NDRANGE, &m.nd, sizeof (m.nd), &m.arg,
                    sizeof (m.arg), what);
}

static int32_t
ndrange_at (raw_session *s, uint64_t offset)
{
  return ndrange_with (s, POCL_REMOTE_ARG_BUFFER, 0x100, offset, "NDRANGE");
}

static void
sub_buffer_args (raw_session *s)
{
  const uint64_t size = 1 << 16;
  raw_create_buffer (s, 0x100, size);
  pocl_remote_build_program bp;
  memset (&bp, 0, sizeof (bp));
  bp.prog_id = 0x200;
  bp.kind = POCL_REMOTE_BUILD_SOURCE;
  bp.body_len = sizeof (source) - 1;
  int32_t st = 0;
  if (raw_request (s, POCL_RMSG_BUILD_PROGRAM, &bp, sizeof (bp), source,
                   bp.body_len, &st)
      || st != CL_SUCCESS)
    fail ("BUILD_PROGRAM: %d (%s)", st, clerr (st));
  pocl_remote_create_kernel ck;
  memset (&ck, 0, sizeof (ck));
  ck.kernel_id = 0x300;
  ck.prog_id = 0x200;
  ck.name_len = 5;
  if (raw_request (s, POCL_RMSG_CREATE_KERNEL, &ck, sizeof (ck), "seven", 5,
                   &st)
      || st != CL_SUCCESS)
    fail ("CREATE_KERNEL: %d (%s)", st, clerr (st));

  static const uint64_t bad[] = { 1, 4, size, size + 4096, 1ull << 63,
                                  UINT64_MAX - 4095 };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); ++i)
    {
      st = ndrange_at (s, bad[i]);
      if (st != CL_MISALIGNED_SUB_BUFFER_OFFSET && st != CL_INVALID_VALUE)
        fail ("a buffer argument at offset %llu: status %d (%s), expected "
              "an error",
              (unsigned long long)bad[i], st, clerr (st));
    }
  /* 4096 is aligned for any device (OpenCL asks 128 bytes at most) */
  for (int round = 0; round < 2; ++round)
    if ((st = ndrange_at (s, 4096)) != CL_COMPLETE)
      fail ("a buffer argument at offset 4096: status %d (%s)", st,
            clerr (st));
  unsigned char *data = NULL;
  uint64_t got = 0;
  /* below POCL_REMOTE_DATA_SOCKET_THRESHOLD: comes with the completion */
  const uint64_t part = 8192;
  if (raw_read (s, 1, 0x100, part, &st, &data, &got) || st != CL_COMPLETE
      || got != part)
    fail ("READ after the kernels: status %d, %llu bytes", st,
          (unsigned long long)got);
  for (uint64_t i = 0; i < 16; ++i)
    {
      uint32_t v;
      memcpy (&v, data + 4096 + 4 * i, 4);
      if (v != 7)
        fail ("word %llu past offset 4096 is %u, not 7",
              (unsigned long long)i, v);
    }
  free (data);
  note ("buffer arguments at %zu offsets that make no sub-buffer refused, "
        "one that does written through",
        sizeof (bad) / sizeof (bad[0]));
}

/* SVM_ALLOC's address (0: refused: a server without SVM), its status in
   *status where not NULL.  */
static uint64_t
svm_alloc_kind (raw_session *s, uint64_t size, uint32_t kind, uint64_t flags,
                int32_t *status)
{
  pocl_remote_svm_alloc a;
  memset (&a, 0, sizeof (a));
  a.size = size;
  a.flags = flags;
  a.kind = kind;
  uint64_t id = ++s->next_id, addr = 0;
  if (raw_send (s->cmd, POCL_RMSG_SVM_ALLOC, id, &a, sizeof (a), NULL, 0))
    fail ("SVM_ALLOC: pocld closed the connection");
  for (;;)
    {
      raw_msg m;
      if (raw_recv (s->cmd, &m, 20000))
        fail ("SVM_ALLOC: no reply");
      if (m.h.type == POCL_RMSG_REPLY && m.h.id == id)
        {
          if (m.body.reply.status == CL_SUCCESS && m.h.payload_size == 8)
            memcpy (&addr, m.payload, 8);
          if (status != NULL)
            *status = m.body.reply.status;
          free (m.payload);
          return addr;
        }
      free (m.payload);
    }
}

static uint64_t
svm_alloc (raw_session *s, uint64_t size)
{
  return svm_alloc_kind (s, size, POCL_REMOTE_ALLOC_SVM, CL_MEM_READ_WRITE,
                         NULL);
}

/* SVM_READ's status, and its bytes into out (size of them) on success.  */
static int32_t
svm_read (raw_session *s, uint64_t address, uint64_t size, void *out)
{
  pocl_remote_svm_sync r = { address, size };
  uint64_t id = ++s->next_id;
  if (raw_send (s->cmd, POCL_RMSG_SVM_READ, id, &r, sizeof (r), NULL, 0))
    fail ("SVM_READ: pocld closed the connection");
  for (;;)
    {
      raw_msg m;
      if (raw_recv (s->cmd, &m, 20000))
        fail ("SVM_READ: no reply");
      if (m.h.type == POCL_RMSG_REPLY && m.h.id == id)
        {
          int32_t st = m.body.reply.status;
          if (st == CL_SUCCESS && m.h.payload_size != size)
            fail ("SVM_READ of %llu bytes: %llu in the reply",
                  (unsigned long long)size,
                  (unsigned long long)m.h.payload_size);
          if (st == CL_SUCCESS)
            memcpy (out, m.payload, size);
          free (m.payload);
          return st;
        }
      free (m.payload);
    }
}

static void
svm_write (raw_session *s, uint64_t address, uint64_t size, const void *bytes,
           uint64_t bytes_size)
{
  pocl_remote_svm_sync w = { address, size };
  if (raw_send (s->cmd, POCL_RMSG_SVM_WRITE, 0, &w, sizeof (w), bytes,
                bytes_size))
    fail ("SVM_WRITE: pocld closed the connection");
}

/* The host's reads and writes of device memory (SVM_READ, SVM_WRITE)
   outside the allocation a, or with a payload that is not their size, are
   refused; inside it they land.  */
static void
host_access (raw_session *s, uint64_t a)
{
  uint8_t bytes[16], back[16];
  for (int i = 0; i < 16; ++i)
    bytes[i] = (uint8_t)(0xA0 + i);
  const uint64_t bad[] = { 0x1000, a - 8, a + 4096 - 8, UINT64_MAX - 7 };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); ++i)
    {
      int32_t st = svm_read (s, bad[i], 16, back);
      if (st != CL_INVALID_VALUE)
        fail ("SVM_READ at %#llx: status %d, expected CL_INVALID_VALUE",
              (unsigned long long)bad[i], st);
      svm_write (s, bad[i], 16, bytes, 16);
    }
  if (svm_read (s, a, 0, back) != CL_INVALID_VALUE)
    fail ("SVM_READ of 0 bytes: not CL_INVALID_VALUE");
  if (svm_read (s, a, (uint64_t)1 << 40, back) != CL_INVALID_VALUE)
    fail ("SVM_READ of 2^40 bytes: not CL_INVALID_VALUE");
  svm_write (s, a + 64, 16, bytes, 8);
  svm_write (s, a + 64, 8, bytes, 16);
  if (svm_read (s, a + 64, 16, back) != CL_SUCCESS)
    fail ("SVM_READ inside the allocation refused");
  uint8_t zeros[16] = { 0 };
  if (memcmp (back, bytes, 16) == 0 && memcmp (back, zeros, 16) != 0)
    fail ("SVM_WRITE with a payload of the wrong size was taken");
  svm_write (s, a + 64, 16, bytes, 16);
  if (svm_read (s, a + 64, 16, back) != CL_SUCCESS
      || memcmp (back, bytes, 16) != 0)
    fail ("SVM_WRITE then SVM_READ inside the allocation: other bytes");
  note ("host reads and writes of device memory outside it, or of the "
        "wrong size, refused; inside it they land");
}

/* KERNEL_INFO's status for a kernel id, kind and input.  */
static int32_t
kernel_info (raw_session *s, uint64_t kernel, uint32_t kind,
             uint32_t input_size, const void *input, uint64_t input_sent)
{
  pocl_remote_kernel_info k;
  memset (&k, 0, sizeof (k));
  k.kernel_id = kernel;
  k.kind = kind;
  k.param = CL_KERNEL_WORK_GROUP_SIZE;
  k.input_size = input_size;
  int32_t st = 0;
  if (raw_request (s, POCL_RMSG_KERNEL_INFO, &k, sizeof (k), input,
                   input_sent, &st))
    fail ("KERNEL_INFO: pocld closed the connection");
  return st;
}

/* Kernel queries of a kernel the session does not have, of an unknown
   kind, or whose input is not its announced size are refused; a good one
   of kernel 0x300 (sub_buffer_args) is answered.  */
static void
kernel_queries (raw_session *s)
{
  uint8_t in[8] = { 0 };
  int32_t st;
  if ((st = kernel_info (s, 987654, POCL_REMOTE_KINFO_WORK_GROUP, 0, NULL, 0))
      != CL_INVALID_KERNEL)
    fail ("KERNEL_INFO of an unknown kernel: %d, expected CL_INVALID_KERNEL",
          st);
  if ((st = kernel_info (s, 0x300, 7, 0, NULL, 0)) != CL_INVALID_VALUE)
    fail ("KERNEL_INFO of kind 7: %d, expected CL_INVALID_VALUE", st);
  if ((st = kernel_info (s, 0x300, POCL_REMOTE_KINFO_SUB_GROUP, 16, in, 8))
      != CL_INVALID_VALUE)
    fail ("KERNEL_INFO with 8 of 16 input bytes: %d, expected "
          "CL_INVALID_VALUE",
          st);
  if ((st = kernel_info (s, 0x300, POCL_REMOTE_KINFO_WORK_GROUP, 0, NULL, 0))
      != CL_SUCCESS)
    fail ("KERNEL_INFO of CL_KERNEL_WORK_GROUP_SIZE: %d", st);
  note ("kernel queries of an unknown kernel, kind or input size refused, a "
        "good one answered");
}

/* USM kinds (SVM_ALLOC's kind): one the protocol does not have, and USM
   flags no allocation has, are CL_INVALID_VALUE; a device allocation with
   valid flags is made.  */
static void
usm_kinds (raw_session *s)
{
  int32_t st = 0;
  if (svm_alloc_kind (s, 4096, 4, 0, &st) != 0 || st != CL_INVALID_VALUE)
    fail ("SVM_ALLOC of kind 4: status %d, expected CL_INVALID_VALUE", st);
  if (svm_alloc_kind (s, 4096, POCL_REMOTE_ALLOC_USM_SHARED, 1u << 20, &st)
          != 0
      || st != CL_INVALID_VALUE)
    fail ("SVM_ALLOC of a shared allocation with flag bit 20: status %d, "
          "expected CL_INVALID_VALUE",
          st);
  uint64_t a
      = svm_alloc_kind (s, 4096, POCL_REMOTE_ALLOC_USM_DEVICE, 0, &st);
  if (a == 0)
    {
      note ("the server makes no USM device allocation (%d)", st);
      return;
    }
  host_access (s, a);
  pocl_remote_release rel = { a };
  if (raw_send (s->cmd, POCL_RMSG_SVM_FREE, ++s->next_id, &rel, sizeof (rel),
                NULL, 0))
    fail ("SVM_FREE: pocld closed the connection");
  note ("an unknown allocation kind and unknown USM flags refused, a USM "
        "device allocation made");
}

static int32_t
ndrange_svm (raw_session *s, uint64_t address)
{
  return ndrange_with (s, POCL_REMOTE_ARG_SVM, address, 0,
                       "NDRANGE with an SVM pointer");
}

/* SVM addresses outside the session's allocations are refused, never
   dereferenced: kernel arguments, reads, fine-grained regions.  */
static void
svm_pointers (raw_session *s)
{
  const uint64_t size = 4096;
  uint64_t a = svm_alloc (s, size);
  if (a == 0)
    {
      note ("the server allocates no SVM: SVM pointers not tried");
      return;
    }
  const uint64_t bad[] = { 0x1000, a - 4, a + size, a + (1ull << 40),
                           UINT64_MAX - 3 };
  int32_t st;
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); ++i)
    if ((st = ndrange_svm (s, bad[i])) != CL_INVALID_ARG_VALUE)
      fail ("an SVM argument at %#llx: status %d (%s), expected "
            "CL_INVALID_ARG_VALUE",
            (unsigned long long)bad[i], st, clerr (st));
  if ((st = ndrange_svm (s, a + 64)) != CL_COMPLETE)
    fail ("an SVM argument inside the allocation: status %d (%s)", st,
          clerr (st));
  pocl_remote_mem_cmd mc;
  memset (&mc, 0, sizeof (mc));
  mc.cmd.queue_id = 1;
  mc.cmd.flags = POCL_RCMD_SVM;
  mc.src_id = a + size - 8;
  mc.region[0] = mc.data_size = 16; /* 8 bytes past the end */
  if ((st = completes (s, POCL_RMSG_READ, &mc, sizeof (mc), NULL, 0,
                       "SVM READ"))
      != CL_INVALID_VALUE)
    fail ("an SVM read past the allocation: status %d (%s)", st, clerr (st));
  mc.src_id = a + 64;
  unsigned char *data = NULL;
  uint64_t got = 0;
  if (raw_command (s, POCL_RMSG_READ, &mc, sizeof (mc), NULL, 0, &st, &data,
                   &got)
      || st != CL_COMPLETE || got != 16)
    fail ("an SVM read inside the allocation: status %d, %llu bytes", st,
          (unsigned long long)got);
  for (int i = 0; i < 16; i += 4)
    {
      uint32_t v;
      memcpy (&v, data + i, 4);
      if (v != 7)
        fail ("the kernel's SVM word %d is %u, not 7", i / 4, v);
    }
  free (data);
  /* a fine-grained region outside the allocations */
  struct
  {
    pocl_remote_ndrange nd;
    pocl_remote_arg arg;
    pocl_remote_svm_sync head, region;
    uint64_t bytes;
  } f;
  memset (&f, 0, sizeof (f));
  f.nd.cmd.queue_id = 1;
  f.nd.cmd.flags = POCL_RCMD_SVM;
  f.nd.kernel_id = 0x300;
  f.nd.work_dim = 1;
  f.nd.num_args = 1;
  f.nd.global[0] = 1;
  f.nd.global[1] = f.nd.global[2] = 1;
  f.nd.args_size = sizeof (f.arg);
  f.arg.kind = POCL_REMOTE_ARG_SVM;
  f.arg.a = a;
  f.head.address = 1;
  f.head.size = 8;
  f.region.address = a + size;
  f.region.size = 8;
  if ((st = completes (s, POCL_RMSG_NDRANGE, &f.nd, sizeof (f.nd), &f.arg,
                       sizeof (f) - sizeof (f.nd), "NDRANGE, SVM regions"))
      != CL_INVALID_VALUE)
    fail ("a fine-grained region past the allocation: status %d (%s)", st,
          clerr (st));
  /* the argument cached by the server before the free */
  if ((st = ndrange_svm (s, a + 64)) != CL_COMPLETE)
    fail ("an SVM argument inside the allocation, again: status %d (%s)", st,
          clerr (st));
  pocl_remote_release rel = { a };
  if (raw_send (s->cmd, POCL_RMSG_SVM_FREE, 0, &rel, sizeof (rel), NULL, 0))
    fail ("SVM_FREE: pocld closed the connection");
  if ((st = ndrange_svm (s, a + 64)) != CL_INVALID_ARG_VALUE)
    fail ("an SVM argument in a freed allocation: status %d (%s)", st,
          clerr (st));
  /* an allocation freed while a buffer made on it lives: the buffer's
     memory stays until the buffer goes */
  uint64_t b = svm_alloc (s, size);
  pocl_remote_create_buffer cb;
  memset (&cb, 0, sizeof (cb));
  cb.mem_id = 0x101;
  cb.flags = CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR;
  cb.size = size;
  if (b == 0
      || raw_request (s, POCL_RMSG_CREATE_BUFFER, &cb, sizeof (cb), &b, 8,
                      &st)
      || st != CL_SUCCESS)
    fail ("a buffer on SVM memory: status %d (%s)", st, clerr (st));
  rel.obj_id = b;
  if (raw_send (s->cmd, POCL_RMSG_SVM_FREE, 0, &rel, sizeof (rel), NULL, 0))
    fail ("SVM_FREE: pocld closed the connection");
  if ((st = ndrange_svm (s, b)) != CL_INVALID_ARG_VALUE)
    fail ("an SVM argument in a freed allocation with a buffer on it: status "
          "%d (%s)",
          st, clerr (st));
  struct
  {
    pocl_remote_ndrange nd;
    pocl_remote_arg arg;
  } kb;
  memset (&kb, 0, sizeof (kb));
  kb.nd.cmd.queue_id = 1;
  kb.nd.kernel_id = 0x300;
  kb.nd.work_dim = 1;
  kb.nd.num_args = 1;
  kb.nd.global[0] = 16;
  kb.nd.global[1] = kb.nd.global[2] = 1;
  kb.nd.args_size = sizeof (kb.arg);
  kb.arg.kind = POCL_REMOTE_ARG_BUFFER;
  kb.arg.a = 0x101;
  if ((st = completes (s, POCL_RMSG_NDRANGE, &kb.nd, sizeof (kb.nd), &kb.arg,
                       sizeof (kb.arg), "NDRANGE on the buffer"))
      != CL_COMPLETE)
    fail ("a kernel on a buffer whose SVM memory was freed: status %d (%s)",
          st, clerr (st));
  /* a buffer read into the server's SVM memory: only inside an allocation,
     with no data size, and only for READ and WRITE */
  memset (&mc, 0, sizeof (mc));
  mc.cmd.queue_id = 1;
  mc.cmd.flags = POCL_RCMD_SVM_HOST;
  mc.src_id = 0x101;
  mc.dst_id = b + size - 8;
  mc.region[0] = 16;
  if ((st = completes (s, POCL_RMSG_READ, &mc, sizeof (mc), NULL, 0,
                       "READ into SVM"))
      != CL_INVALID_VALUE)
    fail ("a buffer read past the SVM allocation: status %d (%s)", st,
          clerr (st));
  mc.dst_id = b;
  if ((st = completes (s, POCL_RMSG_COPY, &mc, sizeof (mc), NULL, 0,
                       "COPY into SVM"))
      != CL_INVALID_VALUE)
    fail ("a COPY with POCL_RCMD_SVM_HOST: status %d (%s)", st, clerr (st));
  rel.obj_id = 0x101;
  if (raw_send (s->cmd, POCL_RMSG_FREE_BUFFER, 0, &rel, sizeof (rel), NULL, 0))
    fail ("FREE_BUFFER: pocld closed the connection");
  note ("SVM arguments at %zu addresses outside the allocations, a read past "
        "one and a fine-grained region past one refused; a freed one too; a "
        "buffer on SVM memory outlives the allocation's free; buffer reads "
        "into SVM memory checked",
        sizeof (bad) / sizeof (bad[0]));
}

static void
image_sizes (raw_session *s)
{
  pocl_remote_create_image ci;
  memset (&ci, 0, sizeof (ci));
  ci.mem_id = 0x400;
  ci.flags = CL_MEM_READ_WRITE;
  ci.image_type = CL_MEM_OBJECT_IMAGE2D;
  ci.channel_order = CL_RGBA;
  ci.channel_type = CL_UNORM_INT8;
  ci.width = 64;
  ci.height = 64;
  int32_t st = 0;
  if (raw_request (s, POCL_RMSG_CREATE_IMAGE, &ci, sizeof (ci), NULL, 0, &st)
      || st != CL_SUCCESS)
    fail ("CREATE_IMAGE: %d (%s)", st, clerr (st));
  const uint64_t right = 64 * 64 * 4;
  static unsigned char bytes[64 * 64 * 4 + 8];
  pocl_remote_mem_cmd mc;
  mem_cmd_init (&mc, 1, 0x400, 0, 64);
  mc.region[1] = 64;
  mc.data_size = right + 4;
  if ((st = completes (s, POCL_RMSG_READ_IMAGE, &mc, sizeof (mc), NULL, 0,
                       "READ_IMAGE"))
      != CL_INVALID_VALUE)
    fail ("READ_IMAGE of a wrong size: status %d (%s)", st, clerr (st));
  mem_cmd_init (&mc, 1, 0, 0x400, 64);
  mc.region[1] = 64;
  mc.data_size = right - 4;
  if ((st = completes (s, POCL_RMSG_WRITE_IMAGE, &mc, sizeof (mc), bytes,
                       mc.data_size, "WRITE_IMAGE"))
      != CL_INVALID_VALUE)
    fail ("WRITE_IMAGE of a wrong size (inline): status %d (%s)", st,
          clerr (st));
  /* on the data socket: the bytes still go, and are consumed */
  mem_cmd_init (&mc, 1, 0, 0x400, 64);
  mc.region[1] = 64;
  mc.data_size = POCL_REMOTE_DATA_SOCKET_THRESHOLD + 8;
  mc.cmd.flags = POCL_RCMD_DATA_ON_DATA_SOCKET;
  static unsigned char big[POCL_REMOTE_DATA_SOCKET_THRESHOLD + 8];
  uint64_t id = ++s->next_id;
  if (raw_send (s->cmd, POCL_RMSG_WRITE_IMAGE, id, &mc, sizeof (mc), NULL, 0)
      || raw_send (s->data, POCL_RMSG_DATA, id, NULL, 0, big, mc.data_size))
    fail ("WRITE_IMAGE on the data socket: connection closed");
  for (;;)
    {
      raw_msg m;
      if (raw_recv (s->cmd, &m, 20000))
        fail ("no COMPLETION for the WRITE_IMAGE on the data socket");
      free (m.payload);
      if (m.h.type == POCL_RMSG_COMPLETION && m.h.id == id)
        {
          st = m.body.completion.status;
          break;
        }
    }
  if (st != CL_INVALID_VALUE)
    fail ("WRITE_IMAGE of a wrong size (data socket): status %d (%s)", st,
          clerr (st));
  /* the right size still works after all that */
  mem_cmd_init (&mc, 1, 0, 0x400, 64);
  mc.region[1] = 64;
  mc.data_size = right;
  memset (bytes, 0x3c, right);
  if ((st = completes (s, POCL_RMSG_WRITE_IMAGE, &mc, sizeof (mc), bytes,
                       right, "WRITE_IMAGE"))
      != CL_COMPLETE)
    fail ("WRITE_IMAGE of the right size: status %d (%s)", st, clerr (st));
  note ("READ_IMAGE and WRITE_IMAGE of wrong sizes: CL_INVALID_VALUE, "
        "session served");
}

/* A CMDBUF_CREATE payload being built: entries of a FILL of 0x100 (its
   offset and size) or of the kernel 0x300 on 0x100, each waiting for the
   sync points given.  */
typedef struct cmdbuf_msg
{
  unsigned char p[1024];
  size_t len;
  uint32_t n;
} cmdbuf_msg;

static void
put_entry (cmdbuf_msg *m, uint32_t type, uint32_t sync, int has_sync,
           const void *body, size_t bsize, const void *pl, size_t psize)
{
  pocl_remote_cmdbuf_entry e = { type, has_sync ? 1u : 0u, bsize + psize };
  memcpy (m->p + m->len, &e, sizeof (e));
  m->len += sizeof (e);
  if (has_sync)
    {
      uint32_t pad[2] = { sync, 0 };
      memcpy (m->p + m->len, pad, 8);
      m->len += 8;
    }
  memcpy (m->p + m->len, body, bsize);
  memcpy (m->p + m->len + bsize, pl, psize);
  m->len += bsize + psize;
  m->n++;
}

static void
put_fill (cmdbuf_msg *m, uint64_t mem, uint64_t offset, uint64_t size)
{
  pocl_remote_mem_cmd mc;
  memset (&mc, 0, sizeof (mc));
  mc.dst_id = mem;
  mc.dst_origin[0] = offset;
  mc.region[0] = size;
  mc.data_size = 4;
  uint32_t nine = 9;
  put_entry (m, POCL_RMSG_FILL, 0, 0, &mc, sizeof (mc), &nine, 4);
}

static void
put_kernel (cmdbuf_msg *m, uint64_t kernel, uint32_t sync, int has_sync)
{
  pocl_remote_ndrange nd;
  pocl_remote_arg arg;
  memset (&nd, 0, sizeof (nd));
  memset (&arg, 0, sizeof (arg));
  nd.kernel_id = kernel;
  nd.work_dim = 1;
  nd.num_args = 1;
  nd.global[0] = 16;
  nd.global[1] = nd.global[2] = 1;
  nd.args_size = sizeof (arg);
  arg.kind = POCL_REMOTE_ARG_BUFFER;
  arg.a = 0x100;
  put_entry (m, POCL_RMSG_NDRANGE, sync, has_sync, &nd, sizeof (nd), &arg,
             sizeof (arg));
}

/* CMDBUF_CREATE of buffer `id` on queue 1: the REPLY's status, or 1 when
   the connection closed.  */
static int32_t
cmdbuf_create (raw_session *s, uint64_t id, const cmdbuf_msg *m)
{
  pocl_remote_cmdbuf_create c;
  memset (&c, 0, sizeof (c));
  c.cmdbuf_id = id;
  c.queue_id = 1;
  c.num_commands = m->n;
  int32_t st = 0;
  if (raw_request (s, POCL_RMSG_CMDBUF_CREATE, &c, sizeof (c), m->p, m->len,
                   &st))
    return 1;
  return st;
}

static int32_t
cmdbuf_run (raw_session *s, uint64_t id)
{
  pocl_remote_cmdbuf_run r;
  memset (&r, 0, sizeof (r));
  r.cmd.queue_id = 1;
  r.cmdbuf_id = id;
  return completes (s, POCL_RMSG_CMDBUF_RUN, &r, sizeof (r), NULL, 0,
                    "CMDBUF_RUN");
}

/* After sub_buffer_args: buffer 0x100 of 64 KiB, kernel 0x300 (seven).  */
static void
command_buffers (raw_session *s)
{
  struct
  {
    const char *what;
    int32_t want;
    uint64_t mem, offset, size, kernel;
  } bad[] = {
    { "a fill of a buffer it does not have", CL_INVALID_MEM_OBJECT, 0x999, 0,
      64, 0 },
    { "a fill beyond its buffer", CL_INVALID_VALUE, 0x100, 65536 - 60, 64, 0 },
    { "a kernel it does not have", CL_INVALID_KERNEL, 0x100, 0, 64, 0x999 },
  };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); ++i)
    {
      cmdbuf_msg m = { .len = 0 };
      put_fill (&m, bad[i].mem, bad[i].offset, bad[i].size);
      if (bad[i].kernel)
        put_kernel (&m, bad[i].kernel, 0, 1);
      int32_t st = cmdbuf_create (s, 0x500 + i, &m);
      if (st != bad[i].want)
        fail ("CMDBUF_CREATE with %s: status %d (%s), expected %d (%s)",
              bad[i].what, st, clerr (st), bad[i].want, clerr (bad[i].want));
    }
  int32_t st = cmdbuf_run (s, 0x500);
  if (st != CL_INVALID_COMMAND_BUFFER_KHR)
    fail ("CMDBUF_RUN of a buffer that was refused: status %d (%s)", st,
          clerr (st));

  /* fill 9 everywhere, then the kernel writes 7 into the first 16 words */
  cmdbuf_msg good = { .len = 0 };
  put_fill (&good, 0x100, 0, 1 << 16);
  put_kernel (&good, 0x300, 0, 1);
  if ((st = cmdbuf_create (s, 0x600, &good)) != CL_SUCCESS)
    fail ("CMDBUF_CREATE of a fill and a kernel: status %d (%s)", st,
          clerr (st));
  for (int r = 0; r < 3; ++r)
    if ((st = cmdbuf_run (s, 0x600)) != CL_COMPLETE)
      fail ("CMDBUF_RUN %d: status %d (%s)", r, st, clerr (st));
  unsigned char *data = NULL;
  uint64_t got = 0;
  if (raw_read (s, 1, 0x100, 128, &st, &data, &got) || st != CL_COMPLETE
      || got != 128)
    fail ("READ after the runs: status %d", st);
  for (int i = 0; i < 32; ++i)
    {
      uint32_t v;
      memcpy (&v, data + 4 * i, 4);
      if (v != (i < 16 ? 7u : 9u))
        fail ("word %d after the runs is %u", i, v);
    }
  free (data);
  pocl_remote_release rel = { 0x600 };
  raw_send (s->cmd, POCL_RMSG_CMDBUF_FREE, 0, &rel, sizeof (rel), NULL, 0);
  if ((st = cmdbuf_run (s, 0x600)) != CL_INVALID_COMMAND_BUFFER_KHR)
    fail ("CMDBUF_RUN after CMDBUF_FREE: status %d (%s)", st, clerr (st));

  /* a command waiting for itself: the session ends, the server serves on */
  raw_session t;
  raw_open (&t);
  raw_create_queue (&t, 1);
  cmdbuf_msg loop = { .len = 0 };
  put_kernel (&loop, 0x300, 0, 1);
  if (cmdbuf_create (&t, 0x700, &loop) != 1)
    fail ("a CMDBUF_CREATE whose command waits for itself was answered");
  raw_close (&t);
  note ("command buffers naming unknown objects or beyond a buffer refused, "
        "runs of unknown buffers fail, a good one runs three times, a "
        "malformed one ends only its session");
}

int
main (void)
{
  raw_port_from_run_remote ();
  alarm (240);
  raw_session s;
  raw_open (&s);
  raw_create_queue (&s, 1);
  sub_buffer_args (&s);
  kernel_queries (&s);
  svm_pointers (&s);
  usm_kinds (&s);
  image_sizes (&s);
  command_buffers (&s);
  raw_close (&s);
  printf ("%s: PASS: bad sub-buffer offsets, SVM pointers, allocation kinds, "
          "image sizes and command buffers get errors, the session goes on\n",
          TEST_NAME);
  return 0;
}
