/* remote_features.c - what of its server's device the remote device
   advertises: the extensions and optional features it serves, and the
   queries that belong to those it hides (doc/device-info.md).

   Served are extensions that the server's compiler alone implements (kernel
   language: atomics, subgroup functions, fp64), those that add only device
   queries (forwarded like every query), and those whose API PoCL's core or
   this driver implements for every device.  Any other extension, a vendor's
   new one included, is hidden until it is forwarded: an application must
   never take an advertised extension for one it can use.  */

#include <string.h>

#include "pocl_util.h"
#include "remote.h"

/* Served by name; an entry ending in '*' is a prefix.  */
static const char *const served_extensions[] = {
  /* kernel language, compiled on the server */
  "cl_khr_byte_addressable_store",
  "cl_khr_global_int32_base_atomics",
  "cl_khr_global_int32_extended_atomics",
  "cl_khr_local_int32_base_atomics",
  "cl_khr_local_int32_extended_atomics",
  "cl_khr_int64_base_atomics",
  "cl_khr_int64_extended_atomics",
  "cl_khr_3d_image_writes",
  "cl_khr_depth_images",
  "cl_khr_srgb_image_writes",
  "cl_khr_fp16",
  "cl_khr_fp64",
  "cl_khr_extended_bit_ops",
  "cl_khr_integer_dot_product",
  "cl_khr_kernel_clock",
  "cl_khr_expect_assume",
  "cl_khr_extended_async_copies",
  "cl_khr_work_group_uniform_arithmetic",
  "cl_ext_float_atomics",
  "cl_ext_cxx_for_opencl",
  "cl_intel_bfloat16*",
  /* and its device query; its kernel queries are forwarded (KERNEL_INFO) */
  "cl_intel_required_subgroup_size",
  "cl_intel_vec_len_hint",
  "cl_nv_compiler_options",
  "cl_nv_pragma_unroll",
  /* device queries only */
  "cl_khr_device_uuid",
  "cl_khr_pci_bus_info",
  "cl_intel_device_attribute_query",
  "cl_nv_device_attribute_query",
  /* API in PoCL's core or this driver; SPIR binaries travel as any binary,
     and the server's device builds them (cl_khr_il_program too, where the
     remote device serves SPIR-V, and cl_intel_unified_shared_memory where
     it serves USM: pocl_remote_extension_served's `served`;
     cl_khr_command_buffer at the version of PoCL's core, whatever the
     server's: remote_devinfo.c adds it) */
  "cl_khr_icd",
  "cl_khr_spir",
  "cl_pocl_content_size",
};

/* Queries that belong to extensions the remote device hides (when the
   server offers them): answered as by a device without the extension.  */
static const cl_device_info hidden_queries[] = {
  /* cl_intel_unified_shared_memory */
  0x4190,
  0x4191,
  0x4192,
  0x4193,
  0x4194,
  /* cl_khr_command_buffer_mutable_dispatch */
  0x12B0,
  /* cl_khr_spirv_queries */
  0x12B9,
  0x12BA,
  0x12BB,
  /* cl_khr_external_semaphore, cl_khr_external_memory, cl_khr_semaphore */
  0x204C,
  0x204D,
  0x204E,
  0x204F,
  0x2052,
  0x2053,
  /* cl_khr_terminate_context: CL_DEVICE_TERMINATE_CAPABILITY_KHR */
  0x2031,
};

int
pocl_remote_extension_served (const char *name, size_t len, unsigned served)
{
  size_t i;
  if ((served & POCL_REMOTE_SERVES_IL) && len == 17
      && memcmp (name, "cl_khr_il_program", 17) == 0)
    return 1;
  if ((served & POCL_REMOTE_SERVES_USM) && len == 30
      && memcmp (name, "cl_intel_unified_shared_memory", 30) == 0)
    return 1;
  for (i = 0; i < sizeof (served_extensions) / sizeof (served_extensions[0]);
       ++i)
    {
      const char *s = served_extensions[i];
      size_t n = strlen (s);
      if (s[n - 1] == '*' ? len >= n - 1 && memcmp (name, s, n - 1) == 0
                          : len == n && memcmp (name, s, n) == 0)
        return 1;
    }
  return 0;
}

/* The server's space-separated list less what is not served.  */
char *
pocl_remote_filter_extensions (const char *server, unsigned served)
{
  size_t len = strlen (server);
  char *out = malloc (len + 1);
  const char *p = server;
  size_t o = 0;
  if (out == NULL)
    return NULL;
  while (*p)
    {
      const char *gap = p, *e;
      while (*p == ' ')
        ++p;
      e = p;
      while (*e && *e != ' ')
        ++e;
      /* the server's own separators, so that a list with nothing hidden
         reads exactly as the server's */
      if (e > p && pocl_remote_extension_served (p, (size_t)(e - p), served))
        {
          if (o > 0)
            {
              memcpy (out + o, gap, (size_t)(p - gap));
              o += (size_t)(p - gap);
            }
          memcpy (out + o, p, (size_t)(e - p));
          o += (size_t)(e - p);
        }
      else if (e > p)
        POCL_MSG_PRINT_INFO ("remote: extension %.*s of the server's device "
                             "is not served, hidden\n",
                             (int)(e - p), p);
      p = e;
    }
  out[o] = 0;
  return out;
}

/* A cl_name_version's name, served as an extension.  */
static int
name_served (const char *name, unsigned served)
{
  return pocl_remote_extension_served (
      name, strnlen (name, CL_NAME_VERSION_MAX_NAME_SIZE), served);
}

/* OpenCL C features less those that need an API this driver does not
   forward: pipes (clCreatePipe's objects) and device-side enqueue
   (on-device queues).  Sub-groups are served: clGetKernelSubGroupInfo
   asks the server (remote_program.c).  Vendors list extensions among them
   too.  */
static int
feature_served (const char *name, unsigned served)
{
  if (strncmp (name, "cl_", 3) == 0)
    return name_served (name, served);
  return strcmp (name, "__opencl_c_pipes") != 0
         && strcmp (name, "__opencl_c_device_enqueue") != 0;
}

/* Drops the entries of a cl_name_version array that `keep` refuses, in
   place; returns the new count.  */
size_t
pocl_remote_filter_name_versions (cl_name_version *a, size_t n, int features,
                                  unsigned served)
{
  size_t i, k = 0;
  for (i = 0; i < n; ++i)
    {
      a[i].name[CL_NAME_VERSION_MAX_NAME_SIZE - 1] = 0;
      if (features ? feature_served (a[i].name, served)
                   : name_served (a[i].name, served))
        a[k++] = a[i];
    }
  return k;
}

int
pocl_remote_query_hidden (cl_device_info param)
{
  size_t i;
  for (i = 0; i < sizeof (hidden_queries) / sizeof (hidden_queries[0]); ++i)
    if (hidden_queries[i] == param)
      return 1;
  return 0;
}

/* A core query whose server answer describes a feature the remote device
   hides: answered as a device without it answers (zero bytes of the
   server's size).  Returns 0 for other queries.  */
int
pocl_remote_query_zeroed (cl_device_id dev, cl_device_info param)
{
  switch (param)
    {
    /* pipes and device-side enqueue: see feature_served */
    case CL_DEVICE_PIPE_SUPPORT:
    case CL_DEVICE_MAX_PIPE_ARGS:
    case CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS:
    case CL_DEVICE_PIPE_MAX_PACKET_SIZE:
    case CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES:
    case CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES:
    case CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE:
    case CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE:
    case CL_DEVICE_MAX_ON_DEVICE_QUEUES:
    case CL_DEVICE_MAX_ON_DEVICE_EVENTS:
      return 1;
    /* images from buffers other than 1D buffer images are not forwarded:
       OpenCL 3.0 asks for 0 without cl_khr_image2d_from_buffer */
    case CL_DEVICE_IMAGE_PITCH_ALIGNMENT:
    case CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT:
      return dev->extensions == NULL
             || strstr (dev->extensions, "cl_khr_image2d_from_buffer") == NULL;
    default:
      return 0;
    }
}

/* Appends "#undef name\n" to *out (of *len bytes).  */
static void
append_undef (char **out, size_t *len, const char *name, size_t n)
{
  char *grown = realloc (*out, *len + n + 9);
  if (grown == NULL)
    return;
  memcpy (grown + *len, "#undef ", 7);
  memcpy (grown + *len + 7, name, n);
  grown[*len + 7 + n] = '\n';
  grown[*len + 8 + n] = 0;
  *out = grown;
  *len += n + 8;
}

/* cl_khr_command_buffer is filtered out of the server's list only to be
   added back at the core's version (remote_devinfo.c): the device has it,
   so a kernel keeps the server's macro for it, as on the device locally.
   The source then reads as the local application's, and PoCL's kernel
   cache on the server finds the same build.  */
static int
added_by_driver (const char *name, size_t n)
{
  return n == 21 && memcmp (name, "cl_khr_command_buffer", 21) == 0;
}

/* What the remote device puts before every source it sends: the server's
   compiler defines a macro for each extension and feature it has, hidden
   ones too, and a kernel must see the same as the API.  "#undef" each,
   then "#line 1", so that the build log's line numbers stay the
   application's.  NULL where nothing is hidden.  `server`: the server's
   extension list; `features`: its OpenCL C features, before filtering.  */
char *
pocl_remote_source_prefix (const char *server, const cl_name_version *features,
                           size_t num_features, unsigned served)
{
  char *out = NULL;
  size_t len = 0, i;
  const char *p = server;
  while (p != NULL && *p)
    {
      const char *e;
      while (*p == ' ')
        ++p;
      for (e = p; *e && *e != ' '; ++e)
        ;
      if (e > p && !pocl_remote_extension_served (p, (size_t)(e - p), served)
          && !added_by_driver (p, (size_t)(e - p)))
        append_undef (&out, &len, p, (size_t)(e - p));
      p = e;
    }
  for (i = 0; i < num_features; ++i)
    {
      size_t n = strnlen (features[i].name, CL_NAME_VERSION_MAX_NAME_SIZE);
      if (strncmp (features[i].name, "cl_", 3) != 0
          && !feature_served (features[i].name, served))
        append_undef (&out, &len, features[i].name, n);
    }
  if (out == NULL)
    return NULL;
  char *done = realloc (out, len + 10);
  if (done == NULL)
    return out;
  memcpy (done + len, "#line 1\n", 9);
  return done;
}
