/* remote_test_util.c - helpers shared by the PoCL-R test programs.

   Not a test itself: each test program #includes this file (all functions
   are static), so every test stays a single, self-contained executable.
   Before including it a test defines TEST_NAME (the prefix of every line it
   prints).  A test prints "TEST_NAME: PASS: ..." and exits 0, or prints
   "TEST_NAME: FAIL: <reason>" and exits 1.  */

#ifndef REMOTE_TEST_UTIL_C
#define REMOTE_TEST_UTIL_C

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_NAME
#error "define TEST_NAME before including remote_test_util.c"
#endif

#define REMOTE_NAME_PART "pocl-remote"

static __attribute__ ((unused)) const char *
clerr (cl_int e)
{
#define E(x)                                                                  \
  case x:                                                                     \
    return #x
  switch (e)
    {
      E (CL_SUCCESS);
      /* event execution states, for event-status messages */
      E (CL_RUNNING);
      E (CL_SUBMITTED);
      E (CL_QUEUED);
      E (CL_DEVICE_NOT_FOUND);
      E (CL_DEVICE_NOT_AVAILABLE);
      E (CL_COMPILER_NOT_AVAILABLE);
      E (CL_MEM_OBJECT_ALLOCATION_FAILURE);
      E (CL_OUT_OF_RESOURCES);
      E (CL_OUT_OF_HOST_MEMORY);
      E (CL_PROFILING_INFO_NOT_AVAILABLE);
      E (CL_MEM_COPY_OVERLAP);
      E (CL_IMAGE_FORMAT_MISMATCH);
      E (CL_IMAGE_FORMAT_NOT_SUPPORTED);
      E (CL_BUILD_PROGRAM_FAILURE);
      E (CL_MAP_FAILURE);
      E (CL_MISALIGNED_SUB_BUFFER_OFFSET);
      E (CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
      E (CL_COMPILE_PROGRAM_FAILURE);
      E (CL_LINKER_NOT_AVAILABLE);
      E (CL_LINK_PROGRAM_FAILURE);
      E (CL_DEVICE_PARTITION_FAILED);
      E (CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
      E (CL_INVALID_VALUE);
      E (CL_INVALID_DEVICE_TYPE);
      E (CL_INVALID_PLATFORM);
      E (CL_INVALID_DEVICE);
      E (CL_INVALID_CONTEXT);
      E (CL_INVALID_QUEUE_PROPERTIES);
      E (CL_INVALID_COMMAND_QUEUE);
      E (CL_INVALID_HOST_PTR);
      E (CL_INVALID_MEM_OBJECT);
      E (CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
      E (CL_INVALID_IMAGE_SIZE);
      E (CL_INVALID_SAMPLER);
      E (CL_INVALID_BINARY);
      E (CL_INVALID_BUILD_OPTIONS);
      E (CL_INVALID_PROGRAM);
      E (CL_INVALID_PROGRAM_EXECUTABLE);
      E (CL_INVALID_KERNEL_NAME);
      E (CL_INVALID_KERNEL_DEFINITION);
      E (CL_INVALID_KERNEL);
      E (CL_INVALID_ARG_INDEX);
      E (CL_INVALID_ARG_VALUE);
      E (CL_INVALID_ARG_SIZE);
      E (CL_INVALID_KERNEL_ARGS);
      E (CL_INVALID_WORK_DIMENSION);
      E (CL_INVALID_WORK_GROUP_SIZE);
      E (CL_INVALID_WORK_ITEM_SIZE);
      E (CL_INVALID_GLOBAL_OFFSET);
      E (CL_INVALID_EVENT_WAIT_LIST);
      E (CL_INVALID_EVENT);
      E (CL_INVALID_OPERATION);
      E (CL_INVALID_GL_OBJECT);
      E (CL_INVALID_BUFFER_SIZE);
      E (CL_INVALID_MIP_LEVEL);
      E (CL_INVALID_GLOBAL_WORK_SIZE);
      E (CL_INVALID_PROPERTY);
      E (CL_INVALID_IMAGE_DESCRIPTOR);
      E (CL_INVALID_COMPILER_OPTIONS);
      E (CL_INVALID_LINKER_OPTIONS);
      E (CL_INVALID_DEVICE_PARTITION_COUNT);
    default:
      return "(unknown OpenCL code)";
    }
#undef E
}

static __attribute__ ((unused)) void fail (const char *fmt, ...)
    __attribute__ ((noreturn, format (printf, 1, 2)));

/* Inside run_sub (main thread only): where fail() and a watchdog expiry
   return to.  */
static sigjmp_buf *volatile fail_jump;
static pthread_t main_thread;
static volatile sig_atomic_t sub_hung;

static __attribute__ ((unused)) void
fail (const char *fmt, ...)
{
  va_list ap;
  fflush (stdout);
  fprintf (stderr, "%s: FAIL: ", TEST_NAME);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  fflush (stderr);
  if (fail_jump && pthread_equal (pthread_self (), main_thread))
    siglongjmp (*fail_jump, 1);
  exit (1);
}

static __attribute__ ((unused)) void note (const char *fmt, ...)
    __attribute__ ((format (printf, 1, 2)));

static __attribute__ ((unused)) void
note (const char *fmt, ...)
{
  va_list ap;
  printf ("%s: ", TEST_NAME);
  va_start (ap, fmt);
  vprintf (fmt, ap);
  va_end (ap);
  putchar ('\n');
  fflush (stdout);
}

/* A failing OpenCL call: the call's text, the code and its name, the line. */
#define CHECK(call)                                                           \
  do                                                                          \
    {                                                                         \
      cl_int check_err_ = (call);                                             \
      if (check_err_ != CL_SUCCESS)                                           \
        fail ("%s returned %d (%s) at line %d", #call, check_err_,            \
              clerr (check_err_), __LINE__);                                  \
    }                                                                         \
  while (0)

#define CHECK_ERR(err, what)                                                  \
  do                                                                          \
    {                                                                         \
      cl_int check_err_ = (err);                                              \
      if (check_err_ != CL_SUCCESS)                                           \
        fail ("%s returned %d (%s) at line %d", (what), check_err_,           \
              clerr (check_err_), __LINE__);                                  \
    }                                                                         \
  while (0)

#define EXPECT(cond, ...)                                                     \
  do                                                                          \
    {                                                                         \
      if (!(cond))                                                            \
        fail (__VA_ARGS__);                                                   \
    }                                                                         \
  while (0)

/* Watchdog: a test that hangs fails with a clear message naming what it
   was waiting for, instead of being killed silently by CTest's TIMEOUT.
   Outside run_sub the process exits; inside, the check is abandoned (counted
   as failed) and the next one runs.  */
static const char *volatile watchdog_what = "the test";

/* What the handler runs on a hang, made when the watchdog is installed:
   REMOTE_TEST_ON_HANG (pocld_fixture.sh stacks: the servers' stacks) with
   this process too (pid:N), its threads' stacks taken while they still
   wait where they hung (gdb attached from the child; the main thread waits
   for it in the handler).  */
static char hang_cmd[2048];

static void
make_hang_cmd (void)
{
  const char *hook = getenv ("REMOTE_TEST_ON_HANG");
  if (hook == NULL || *hook == '\0')
    return;
  int n = snprintf (hang_cmd, sizeof (hang_cmd), "%s pid:%d", hook,
                    (int)getpid ());
  if (n < 0 || (size_t)n >= sizeof (hang_cmd))
    hang_cmd[0] = '\0';
}

/* fork, execve and waitpid only: async-signal-safe.  */
static void
run_hang_cmd (void)
{
  if (hang_cmd[0] == '\0')
    return;
  pid_t pid = fork ();
  if (pid == 0)
    {
      execl ("/bin/sh", "sh", "-c", hang_cmd, (char *)NULL);
      _exit (127);
    }
  if (pid > 0)
    while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
      ;
}

static void
watchdog_handler (int sig)
{
  if (!pthread_equal (pthread_self (), main_thread))
    {
      /* only the main thread may jump: forward it there */
      pthread_kill (main_thread, sig);
      return;
    }
  char msg[600];
  int n = snprintf (msg, sizeof (msg),
                    "%s: FAIL: timed out (watchdog) while waiting for %s\n",
                    TEST_NAME, watchdog_what);
  if (n > 0)
    {
      ssize_t w = write (2, msg, (size_t)n < sizeof (msg) ? (size_t)n
                                                           : sizeof (msg) - 1);
      (void)w;
    }
  run_hang_cmd ();
  if (fail_jump)
    {
      sub_hung = 1;
      siglongjmp (*fail_jump, 2);
    }
  _exit (1);
}

/* Arms (seconds > 0) or disarms (0) the watchdog; WHAT names the operation
   in the failure message.  Call from the main thread first.  */
static __attribute__ ((unused)) void
watchdog (unsigned seconds, const char *what)
{
  static int installed;
  if (!installed)
    {
      struct sigaction sa;
      memset (&sa, 0, sizeof (sa));
      sa.sa_handler = watchdog_handler;
      sigaction (SIGALRM, &sa, NULL);
      main_thread = pthread_self ();
      make_hang_cmd ();
      installed = 1;
    }
  watchdog_what = what ? what : "the test";
  alarm (seconds);
}

/* Names the step now running (for the watchdog's message) without
   re-arming it.  */
static __attribute__ ((unused)) void
step (const char *what)
{
  watchdog_what = what;
}

/* Independent checks of one program: a failing check (fail() inside FN,
   or FN hanging past SECONDS) is counted and the next one still runs, so
   one bug does not hide the others.  sub_after_failure (may be NULL) drains
   what a failed (not hung) check left queued.  sub_finish() prints the
   verdict and returns the exit status.  */
static int sub_failures, sub_total;
static void (*sub_after_failure) (void);

static __attribute__ ((unused)) void
run_sub (const char *name, void (*fn) (void), unsigned seconds)
{
  sigjmp_buf jb;
  ++sub_total;
  watchdog (seconds, name);
  fail_jump = &jb;
  int r = sigsetjmp (jb, 1);
  if (r == 0)
    fn ();
  else
    {
      fail_jump = NULL;
      ++sub_failures;
      fprintf (stderr, "%s: check '%s' FAILED%s; continuing\n", TEST_NAME,
               name,
               r == 2 ? " (hung: its commands stay blocked, later checks on "
                        "the same queues may hang too)"
                      : " (reason above)");
      if (r == 1 && sub_after_failure)
        {
          watchdog (seconds, "draining the queues after a failed check");
          sub_after_failure ();
        }
    }
  fail_jump = NULL;
  alarm (0);
}

static __attribute__ ((unused)) int
sub_finish (const char *what)
{
  if (sub_failures)
    {
      fflush (stdout);
      fprintf (stderr, "%s: FAIL: %d of %d checks failed (see above)\n",
               TEST_NAME, sub_failures, sub_total);
      fflush (stderr);
      if (sub_hung)
        _exit (1); /* threads blocked for good: do not run exit handlers */
      return 1;
    }
  printf ("%s: PASS: all %d checks %s\n", TEST_NAME, sub_total, what);
  return 0;
}

static __attribute__ ((unused)) void *
xmalloc (size_t n)
{
  void *p = malloc (n ? n : 1);
  if (p == NULL)
    fail ("out of host memory (%zu bytes)", n);
  return p;
}

static __attribute__ ((unused)) void
device_name (cl_device_id dev, char *buf, size_t size)
{
  buf[0] = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_NAME, size, buf, NULL));
  buf[size - 1] = 0;
}

/* All devices of all platforms.  */
static __attribute__ ((unused)) cl_uint
all_devices (cl_device_id *out, cl_uint max)
{
  cl_platform_id plats[16];
  cl_uint nplat = 0, total = 0;
  cl_int err = clGetPlatformIDs (16, plats, &nplat);
  if (err != CL_SUCCESS || nplat == 0)
    fail ("no OpenCL platform (clGetPlatformIDs returned %d %s, %u "
          "platforms): is OCL_ICD_VENDORS set to the build's ocl-vendors?",
          err, clerr (err), nplat);
  if (nplat > 16)
    nplat = 16;
  for (cl_uint p = 0; p < nplat; ++p)
    {
      cl_uint n = 0;
      err = clGetDeviceIDs (plats[p], CL_DEVICE_TYPE_ALL, max - total,
                            out + total, &n);
      if (err == CL_DEVICE_NOT_FOUND)
        continue;
      CHECK_ERR (err, "clGetDeviceIDs");
      total += n < max - total ? n : max - total;
    }
  return total;
}

/* The first device whose name contains "pocl-remote" (want_remote) or the
   first one whose name does not (the local device); NULL when absent.  */
static __attribute__ ((unused)) cl_device_id
find_device (int want_remote)
{
  cl_device_id devs[64];
  cl_uint n = all_devices (devs, 64);
  char name[512];
  for (cl_uint i = 0; i < n; ++i)
    {
      device_name (devs[i], name, sizeof (name));
      int is_remote = strstr (name, REMOTE_NAME_PART) != NULL;
      if (is_remote == !!want_remote)
        return devs[i];
    }
  return NULL;
}

static __attribute__ ((unused)) cl_device_id
need_remote_device (void)
{
  cl_device_id d = find_device (1);
  if (d == NULL)
    fail ("no device named \"*%s*\": POCL_DEVICES=%s "
          "POCL_REMOTE0_PARAMETERS=%s (is the pocld fixture up?)",
          REMOTE_NAME_PART, getenv ("POCL_DEVICES") ? getenv ("POCL_DEVICES") : "(unset)",
          getenv ("POCL_REMOTE0_PARAMETERS")
              ? getenv ("POCL_REMOTE0_PARAMETERS")
              : "(unset)");
  cl_bool avail = CL_FALSE;
  CHECK (clGetDeviceInfo (d, CL_DEVICE_AVAILABLE, sizeof (avail), &avail,
                          NULL));
  if (!avail)
    fail ("the remote device reports CL_DEVICE_AVAILABLE = CL_FALSE "
          "(could not connect to pocld?)");
  return d;
}

/* The device a test program runs on, its name and a context on it: the
   remote device, or with the argument "local" the first local one (the
   same checks there tell driver bugs from test bugs).  */
static __attribute__ ((unused)) cl_device_id
open_test_device (int argc, char **argv, char *name, size_t name_size,
                  cl_context *ctx)
{
  int remote = !(argc > 1 && strcmp (argv[1], "local") == 0);
  cl_device_id d = remote ? need_remote_device () : find_device (0);
  if (d == NULL)
    fail ("no local device");
  device_name (d, name, name_size);
  note ("device: %s", name);
  cl_int err;
  *ctx = clCreateContext (NULL, 1, &d, NULL, NULL, &err);
  CHECK_ERR (err, "clCreateContext");
  return d;
}

/* The remote device, a context on it and an in-order queue.  */
static __attribute__ ((unused)) cl_command_queue
open_remote_queue (cl_device_id *dev, cl_context *ctx)
{
  cl_int err;
  *dev = need_remote_device ();
  *ctx = clCreateContext (NULL, 1, dev, NULL, NULL, &err);
  CHECK_ERR (err, "clCreateContext");
  cl_command_queue q = clCreateCommandQueue (*ctx, *dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  return q;
}

static __attribute__ ((unused)) char *
build_log (cl_program prog, cl_device_id dev)
{
  size_t n = 0;
  if (clGetProgramBuildInfo (prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n)
          != CL_SUCCESS
      || n == 0)
    {
      char *e = xmalloc (1);
      e[0] = 0;
      return e;
    }
  char *log = xmalloc (n + 1);
  if (clGetProgramBuildInfo (prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL)
      != CL_SUCCESS)
    n = 0;
  log[n] = 0;
  return log;
}

/* Builds SRC for DEV; fails the test with the build log on error.  */
static __attribute__ ((unused)) cl_program
build_program (cl_context ctx, cl_device_id dev, const char *src,
               const char *options)
{
  cl_int err;
  cl_program p = clCreateProgramWithSource (ctx, 1, &src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource");
  err = clBuildProgram (p, 1, &dev, options, NULL, NULL);
  if (err != CL_SUCCESS)
    {
      char *log = build_log (p, dev);
      fail ("clBuildProgram returned %d (%s); build log:\n%s", err,
            clerr (err), log);
    }
  return p;
}

static __attribute__ ((unused)) cl_kernel
create_kernel (cl_program p, const char *name)
{
  cl_int err;
  cl_kernel k = clCreateKernel (p, name, &err);
  if (err != CL_SUCCESS)
    fail ("clCreateKernel(\"%s\") returned %d (%s)", name, err, clerr (err));
  return k;
}

static __attribute__ ((unused)) cl_mem
create_buffer (cl_context ctx, cl_mem_flags flags, size_t size, void *host)
{
  cl_int err;
  cl_mem m = clCreateBuffer (ctx, flags, size, host, &err);
  if (err != CL_SUCCESS)
    fail ("clCreateBuffer(flags 0x%llx, %zu bytes) returned %d (%s)",
          (unsigned long long)flags, size, err, clerr (err));
  return m;
}

/* A buffer filled by an explicit blocking write (not CL_MEM_COPY_HOST_PTR,
   which has its own check): a check of something else does not depend on
   host-pointer initialisation.  */
static __attribute__ ((unused)) cl_mem
buffer_from (cl_context ctx, cl_command_queue q, cl_mem_flags flags,
             size_t size, const void *data)
{
  cl_mem m = create_buffer (ctx, flags, size, NULL);
  cl_int err = clEnqueueWriteBuffer (q, m, CL_TRUE, 0, size, data, 0, NULL,
                                     NULL);
  if (err != CL_SUCCESS)
    fail ("initial clEnqueueWriteBuffer (%zu bytes) returned %d (%s)", size,
          err, clerr (err));
  return m;
}

static __attribute__ ((unused)) cl_int
event_status (cl_event ev)
{
  cl_int st = 1;
  CHECK (clGetEventInfo (ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (st),
                         &st, NULL));
  return st;
}

/* Deterministic pseudo-random 32-bit values: test data that differs per
   (stream, index) and is cheap to recompute for verification.  */
static __attribute__ ((unused)) uint32_t
mix32 (uint32_t stream, uint32_t i)
{
  uint32_t x = stream * 0x9E3779B9u ^ (i + 0x7F4A7C15u) * 0x85EBCA6Bu;
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

/* First index where two byte arrays differ, or -1.  */
static __attribute__ ((unused)) long
first_diff (const void *a, const void *b, size_t n)
{
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; ++i)
    if (x[i] != y[i])
      return (long)i;
  return -1;
}

#endif
