/* remote_devinfo.c - the device's properties as its server reports them
   (DEVICE_INFO): the fields PoCL keeps for its own checks, every entry as
   received for clGetDeviceInfo (which the server's device answers, less
   what remote_features.c hides), queries asked of the server when first
   made, and the partitioning the server's device offers.  */

#include <stddef.h>
#include <string.h>

#include "pocl_image_util.h"
#include "pocl_remote_ext.h"
#include "pocl_remote_pixel.h"
#include "pocl_util.h"
#include "remote.h"

enum info_kind
{
  K_U32,
  K_U64,
  K_SIZE,
  K_SIZE3,
  K_STR,
  K_NAMEVER
};

typedef struct info_field
{
  cl_device_info param;
  size_t offset;
  enum info_kind kind;
} info_field;

#define F(param, field, kind)                                                 \
  {                                                                           \
    param, offsetof (struct _cl_device_id, field), kind                       \
  }

/* Device properties copied from the server's device.  Anything missing
   keeps PoCL's default.  */
static const info_field info_fields[] = {
  F (CL_DEVICE_TYPE, type, K_U64),
  F (CL_DEVICE_VENDOR_ID, vendor_id, K_U32),
  F (CL_DEVICE_MAX_COMPUTE_UNITS, max_compute_units, K_U32),
  F (CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, max_work_item_dimensions, K_U32),
  F (CL_DEVICE_MAX_WORK_GROUP_SIZE, max_work_group_size, K_SIZE),
  F (CL_DEVICE_MAX_WORK_ITEM_SIZES, max_work_item_sizes, K_SIZE3),
  F (CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR, preferred_vector_width_char,
     K_U32),
  F (CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT, preferred_vector_width_short,
     K_U32),
  F (CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT, preferred_vector_width_int, K_U32),
  F (CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG, preferred_vector_width_long,
     K_U32),
  F (CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, preferred_vector_width_float,
     K_U32),
  F (CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, preferred_vector_width_double,
     K_U32),
  F (CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF, preferred_vector_width_half,
     K_U32),
  F (CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR, native_vector_width_char, K_U32),
  F (CL_DEVICE_NATIVE_VECTOR_WIDTH_SHORT, native_vector_width_short, K_U32),
  F (CL_DEVICE_NATIVE_VECTOR_WIDTH_INT, native_vector_width_int, K_U32),
  F (CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG, native_vector_width_long, K_U32),
  F (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, native_vector_width_float, K_U32),
  F (CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE, native_vector_width_double, K_U32),
  F (CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF, native_vector_width_half, K_U32),
  F (CL_DEVICE_MAX_CLOCK_FREQUENCY, max_clock_frequency, K_U32),
  F (CL_DEVICE_ADDRESS_BITS, address_bits, K_U32),
  F (CL_DEVICE_MAX_MEM_ALLOC_SIZE, max_mem_alloc_size, K_U64),
  F (CL_DEVICE_IMAGE_SUPPORT, image_support, K_U32),
  F (CL_DEVICE_MAX_READ_IMAGE_ARGS, max_read_image_args, K_U32),
  F (CL_DEVICE_MAX_WRITE_IMAGE_ARGS, max_write_image_args, K_U32),
  F (CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS, max_read_write_image_args, K_U32),
  F (CL_DEVICE_IMAGE2D_MAX_WIDTH, image2d_max_width, K_SIZE),
  F (CL_DEVICE_IMAGE2D_MAX_HEIGHT, image2d_max_height, K_SIZE),
  F (CL_DEVICE_IMAGE3D_MAX_WIDTH, image3d_max_width, K_SIZE),
  F (CL_DEVICE_IMAGE3D_MAX_HEIGHT, image3d_max_height, K_SIZE),
  F (CL_DEVICE_IMAGE3D_MAX_DEPTH, image3d_max_depth, K_SIZE),
  F (CL_DEVICE_IMAGE_MAX_BUFFER_SIZE, image_max_buffer_size, K_SIZE),
  F (CL_DEVICE_IMAGE_MAX_ARRAY_SIZE, image_max_array_size, K_SIZE),
  F (CL_DEVICE_MAX_SAMPLERS, max_samplers, K_U32),
  F (CL_DEVICE_MAX_PARAMETER_SIZE, max_parameter_size, K_SIZE),
  F (CL_DEVICE_MEM_BASE_ADDR_ALIGN, mem_base_addr_align, K_U32),
  F (CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE, min_data_type_align_size, K_U32),
  F (CL_DEVICE_HALF_FP_CONFIG, half_fp_config, K_U64),
  F (CL_DEVICE_SINGLE_FP_CONFIG, single_fp_config, K_U64),
  F (CL_DEVICE_DOUBLE_FP_CONFIG, double_fp_config, K_U64),
  F (CL_DEVICE_GLOBAL_MEM_CACHE_TYPE, global_mem_cache_type, K_U32),
  F (CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, global_mem_cacheline_size, K_U32),
  F (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, global_mem_cache_size, K_U64),
  F (CL_DEVICE_GLOBAL_MEM_SIZE, global_mem_size, K_U64),
  F (CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, max_constant_buffer_size, K_U64),
  F (CL_DEVICE_MAX_CONSTANT_ARGS, max_constant_args, K_U32),
  F (CL_DEVICE_LOCAL_MEM_TYPE, local_mem_type, K_U32),
  F (CL_DEVICE_LOCAL_MEM_SIZE, local_mem_size, K_U64),
  F (CL_DEVICE_ERROR_CORRECTION_SUPPORT, error_correction_support, K_U32),
  F (CL_DEVICE_HOST_UNIFIED_MEMORY, host_unified_memory, K_U32),
  F (CL_DEVICE_PROFILING_TIMER_RESOLUTION, profiling_timer_resolution, K_SIZE),
  F (CL_DEVICE_ENDIAN_LITTLE, endian_little, K_U32),
  F (CL_DEVICE_COMPILER_AVAILABLE, compiler_available, K_U32),
  F (CL_DEVICE_LINKER_AVAILABLE, linker_available, K_U32),
  F (CL_DEVICE_EXECUTION_CAPABILITIES, execution_capabilities, K_U64),
  F (CL_DEVICE_PRINTF_BUFFER_SIZE, printf_buffer_size, K_SIZE),
  F (CL_DEVICE_VENDOR, vendor, K_STR),
  F (CL_DRIVER_VERSION, driver_version, K_STR),
  F (CL_DEVICE_PROFILE, profile, K_STR),
  F (CL_DEVICE_VERSION, version, K_STR),
  F (CL_DEVICE_EXTENSIONS, extensions, K_STR),
  F (CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE, global_var_pref_size,
     K_SIZE),
  F (CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE, global_var_max_size, K_SIZE),
  F (CL_DEVICE_MAX_NUM_SUB_GROUPS, max_num_sub_groups, K_U32),
  F (CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS,
     sub_group_independent_forward_progress, K_U32),
  F (CL_DEVICE_NUMERIC_VERSION, version_as_cl, K_U32),
  F (CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED, version_of_latest_passed_cts,
     K_STR),
  F (CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES, atomic_memory_capabilities, K_U64),
  F (CL_DEVICE_ATOMIC_FENCE_CAPABILITIES, atomic_fence_capabilities, K_U64),
  F (CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT, non_uniform_work_group_support,
     K_U32),
  F (CL_DEVICE_EXTENSIONS_WITH_VERSION, extensions_with_version, K_NAMEVER),
  F (CL_DEVICE_OPENCL_C_ALL_VERSIONS, opencl_c_with_version, K_NAMEVER),
  F (CL_DEVICE_OPENCL_C_FEATURES, opencl_features_with_version, K_NAMEVER),
};

#undef F

/* Where a K_NAMEVER array's count lives.  */
static size_t *
namever_count (cl_device_id dev, cl_device_info param)
{
  switch (param)
    {
    case CL_DEVICE_EXTENSIONS_WITH_VERSION:
      return &dev->num_extensions_with_version;
    case CL_DEVICE_OPENCL_C_ALL_VERSIONS:
      return &dev->num_opencl_c_with_version;
    default:
      return &dev->num_opencl_features_with_version;
    }
}

static char *
dup_string (const char *p, uint32_t size)
{
  char *s = malloc (size + 1);
  if (s == NULL)
    return NULL;
  memcpy (s, p, size);
  s[size] = 0;
  return s;
}

static void
store_field (cl_device_id dev, const info_field *f, const char *v,
             uint32_t size)
{
  char *field = (char *)dev + f->offset;
  uint64_t u = 0;
  size_t i;
  switch (f->kind)
    {
    case K_U32:
      if (size == 4)
        memcpy (field, v, 4);
      break;
    case K_U64:
      if (size == 8)
        memcpy (field, v, 8);
      break;
    case K_SIZE:
      if (size == 8)
        {
          memcpy (&u, v, 8);
          *(size_t *)field = (size_t)u;
        }
      break;
    case K_SIZE3:
      for (i = 0; i < 3 && (i + 1) * 8 <= size; ++i)
        {
          memcpy (&u, v + i * 8, 8);
          ((size_t *)field)[i] = (size_t)u;
        }
      break;
    case K_STR:
      *(char **)field = dup_string (v, size);
      break;
    case K_NAMEVER:
      if (size % sizeof (cl_name_version) == 0 && size > 0)
        {
          void *a = malloc (size);
          if (a == NULL)
            break;
          memcpy (a, v, size);
          *(void **)field = a;
          *namever_count (dev, f->param) = size / sizeof (cl_name_version);
        }
      break;
    }
}

static void
store_image_formats (cl_device_id dev, uint32_t type, const char *v,
                     uint32_t size)
{
  int idx = opencl_image_type_to_index ((cl_mem_object_type)type);
  if (idx < 0 || idx >= NUM_OPENCL_IMAGE_TYPES || size % 8 != 0 || size == 0)
    return;
  cl_uint n = 0, i;
  cl_image_format *f = calloc (size / 8, sizeof (cl_image_format));
  if (f == NULL)
    return;
  for (i = 0; i < size / 8; ++i)
    {
      uint32_t pair[2];
      memcpy (pair, v + i * 8, 8);
      /* only formats that the wire can size (PoCL's own sizes agree, see
         patch 0130) */
      if (pocl_remote_pixel_size (pair[0], pair[1]) == 0)
        continue;
      f[n].image_channel_order = pair[0];
      f[n++].image_channel_data_type = pair[1];
    }
  if (n == 0)
    {
      free (f);
      return;
    }
  dev->image_formats[idx] = f;
  dev->num_image_formats[idx] = n;
}

static void keep_info (remote_device_data *d, const char *entry, uint64_t n);
static const char *find_info (remote_device_data *d, cl_device_info param,
                              uint32_t *size);

/* SPIR-V is served where the server's device takes it (PoCL's core
   checks a module and finds its specialization constants on the client,
   with or without SPIR-V support of its own: patch 0125).  Then the IL
   queries are the server device's, as PoCL's own fields (its checks and
   supports_binary read them); else the device has no IL.  */
static void
setup_il (cl_device_id dev)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  uint32_t size = 0;
  const char *v = find_info (d, CL_DEVICE_IL_VERSION, &size);
  char *il = v != NULL ? dup_string (v, size) : NULL;
  d->il = il != NULL && strstr (il, "SPIR-V") != NULL;
  dev->supported_spir_v_versions = "";
  dev->ils_with_version = NULL;
  dev->num_ils_with_version = 0;
  if (!d->il)
    {
      free (il);
      return;
    }
  dev->supported_spir_v_versions = il;
  v = find_info (d, CL_DEVICE_ILS_WITH_VERSION, &size);
  if (v != NULL && size > 0 && size % sizeof (cl_name_version) == 0)
    {
      cl_name_version *a = malloc (size);
      size_t i;
      if (a == NULL)
        return;
      memcpy (a, v, size);
      for (i = 0; i < size / sizeof (cl_name_version); ++i)
        a[i].name[CL_NAME_VERSION_MAX_NAME_SIZE - 1] = 0;
      dev->ils_with_version = a;
      dev->num_ils_with_version = size / sizeof (cl_name_version);
    }
}

/* cl_intel_unified_shared_memory, served where the server's device has
   it natively or has SVM, on which pocld serves it (doc/device-info.md):
   access for host, device and single-device shared allocations, atomics
   only in device allocations (whose one copy is the server's); never
   concurrent access, cross-device or system allocations: host and shared
   allocations have a copy on each side, made consistent at
   synchronization points.  */
static void
setup_usm (cl_device_id dev)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  cl_device_svm_capabilities svm = 0;
  uint32_t size = 0;
  int i;
  const char *v = find_info (d, CL_DEVICE_SVM_CAPABILITIES, &size);
  if (v != NULL && size == sizeof (svm))
    memcpy (&svm, v, size);
  memset (dev->usm_caps, 0, sizeof (dev->usm_caps));
  for (i = POCL_USM_HOST; i <= POCL_USM_SINGLE_SHARED; ++i)
    {
      cl_device_unified_shared_memory_capabilities_intel native = 0;
      v = find_info (d, CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL + (unsigned)i,
                     &size);
      if (v != NULL && size == sizeof (native))
        memcpy (&native, v, size);
      if (native == 0 && !(svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))
        continue;
      dev->usm_caps[i] = CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL;
      if (i == POCL_USM_DEVICE)
        dev->usm_caps[i]
            |= native & CL_UNIFIED_SHARED_MEMORY_ATOMIC_ACCESS_INTEL;
    }
  d->usm = dev->usm_caps[POCL_USM_HOST] != 0
           || dev->usm_caps[POCL_USM_DEVICE] != 0
           || dev->usm_caps[POCL_USM_SINGLE_SHARED] != 0;
}

/* A served extension that the server's device does not list (USM on
   SVM, command buffers pocld emulates) added to PoCL's lists.  */
static void
add_extension (cl_device_id dev, const char *name, cl_version version)
{
  size_t n = strlen (name), len;
  const char *e = dev->extensions != NULL ? dev->extensions : "";
  for (const char *p = strstr (e, name); p != NULL; p = strstr (p + 1, name))
    if ((p == e || p[-1] == ' ') && (p[n] == 0 || p[n] == ' '))
      return;
  len = strlen (e);
  char *grown = malloc (len + n + 2);
  if (grown == NULL)
    return;
  memcpy (grown, e, len);
  grown[len] = ' ';
  memcpy (grown + len + (len > 0), name, n + 1);
  free ((char *)dev->extensions);
  dev->extensions = grown;
  if (dev->extensions_with_version == NULL)
    return;
  cl_name_version *a
      = realloc ((cl_name_version *)dev->extensions_with_version,
                 (dev->num_extensions_with_version + 1) * sizeof (*a));
  if (a == NULL)
    return;
  memset (&a[dev->num_extensions_with_version], 0, sizeof (*a));
  memcpy (a[dev->num_extensions_with_version].name, name, n);
  a[dev->num_extensions_with_version].version = version;
  dev->extensions_with_version = a;
  ++dev->num_extensions_with_version;
}

/* The OpenCL C features proper among a device's features (vendors list
   extensions there too).  */
static size_t
language_features (cl_device_id dev)
{
  size_t i, n = 0;
  for (i = 0; i < dev->num_opencl_features_with_version; ++i)
    n += strncmp (dev->opencl_features_with_version[i].name, "__opencl_c_", 11)
         == 0;
  return n;
}

/* PoCL's own copies of the extension and feature lists (it checks them
   itself, e.g. for command buffers) less what is not served.  */
static void
hide_unserved (cl_device_id dev)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  size_t features = dev->num_opencl_features_with_version, i;
  size_t c_features = language_features (dev);
  setup_il (dev);
  setup_usm (dev);
  unsigned bits = (d->il ? POCL_REMOTE_SERVES_IL : 0)
                  | (d->usm ? POCL_REMOTE_SERVES_USM : 0);
  d->source_prefix = pocl_remote_source_prefix (
      dev->extensions, dev->opencl_features_with_version, features, bits);
  if (dev->extensions != NULL)
    {
      char *served = pocl_remote_filter_extensions (dev->extensions, bits);
      if (served != NULL)
        {
          free ((char *)dev->extensions);
          dev->extensions = served;
        }
    }
  if (dev->extensions_with_version != NULL)
    dev->num_extensions_with_version = pocl_remote_filter_name_versions (
        (cl_name_version *)dev->extensions_with_version,
        dev->num_extensions_with_version, 0, bits);
  if (dev->opencl_features_with_version != NULL)
    dev->num_opencl_features_with_version = pocl_remote_filter_name_versions (
        (cl_name_version *)dev->opencl_features_with_version,
        dev->num_opencl_features_with_version, 1, bits);
  if (d->usm)
    add_extension (dev, "cl_intel_unified_shared_memory",
                   CL_MAKE_VERSION (1, 0, 0));
  /* PoCL's core records command buffers and pocld runs them on any device,
     emulating them where the server's device has none (NVIDIA) */
  add_extension (dev, "cl_khr_command_buffer", CL_MAKE_VERSION (0, 9, 0));
  /* OpenCL C 2.0 has no optional features: with one hidden, the device
     does not have it (OpenCL 3.0, CL_DEVICE_OPENCL_C_VERSION), and reports
     OpenCL C 1.2 as its highest full version */
  d->c_version_cut = language_features (dev) != c_features;
  if (d->c_version_cut && dev->opencl_c_with_version != NULL)
    {
      cl_name_version *v = (cl_name_version *)dev->opencl_c_with_version;
      size_t k = 0;
      for (i = 0; i < dev->num_opencl_c_with_version; ++i)
        if (CL_VERSION_MAJOR (v[i].version) != 2)
          v[k++] = v[i];
      dev->num_opencl_c_with_version = k;
    }
}

/* Applies a DEVICE_INFO reply: entries of (param, size, value).  */
void
pocl_remote_apply_device_info (cl_device_id dev, const char *p, uint64_t len,
                               char **name)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  uint64_t pos = 0;
  size_t i;
  while (pos + sizeof (pocl_remote_info_entry) <= len)
    {
      pocl_remote_info_entry e;
      memcpy (&e, p + pos, sizeof (e));
      pos += sizeof (e);
      if (e.size > len - pos)
        break;
      const char *v = p + pos;
      pos += e.size;

      if (e.param == CL_DEVICE_NAME)
        *name = dup_string (v, e.size);
      else if (e.param == POCL_REMOTE_INFO_PLATFORM_INDEX && e.size == 4)
        memcpy (&d->platform, v, 4);
      else if ((e.param & 0xFF000000u) == POCL_REMOTE_INFO_IMAGE_FORMATS (0))
        store_image_formats (dev, e.param & 0xFFFFFFu, v, e.size);
      else
        for (i = 0; i < sizeof (info_fields) / sizeof (info_fields[0]); ++i)
          if (info_fields[i].param == e.param)
            {
              store_field (dev, &info_fields[i], v, e.size);
              break;
            }
      if ((e.param & 0xFE000000u) != 0x7E000000u)
        keep_info (d, v - sizeof (e), sizeof (e) + e.size);
    }
  hide_unserved (dev);
}

/* An entry as received, for clGetDeviceInfo.  */
static void
keep_info (remote_device_data *d, const char *entry, uint64_t n)
{
  char *grown = realloc (d->info, d->info_len + n);
  if (grown == NULL)
    return;
  memcpy (grown + d->info_len, entry, n);
  d->info = grown;
  d->info_len += n;
}

/* The server's entry for param, or NULL.  */
static const char *
find_info (remote_device_data *d, cl_device_info param, uint32_t *size)
{
  uint64_t pos = 0;
  while (d->info != NULL && pos + sizeof (pocl_remote_info_entry) <= d->info_len)
    {
      pocl_remote_info_entry e;
      memcpy (&e, d->info + pos, sizeof (e));
      pos += sizeof (e);
      if (e.param == param)
        {
          *size = e.size;
          return d->info + pos;
        }
      pos += e.size;
    }
  return NULL;
}

/* The server's value of a DEVICE_INFO entry.  */
cl_int
pocl_remote_server_info (cl_device_id dev, cl_device_info param,
                         size_t param_value_size, void *param_value,
                         size_t *param_value_size_ret)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  uint32_t size = 0;
  const char *v = find_info (d, param, &size);
  if (v == NULL)
    return CL_INVALID_VALUE;
  POCL_RETURN_GETINFO_SIZE ((size_t)size, v);
}

/* Sub-devices: PoCL's core partitions a device equally or by counts of its
   compute units, and runs a sub-device's commands on its root device; the
   remote device offers those of the two that the server's device offers.  */
void
pocl_remote_set_partitioning (cl_device_id dev)
{
  static cl_device_partition_property props[POCL_REMOTE_MAX_DEVICES][2];
  static unsigned used;
  cl_uint max_sub = 0;
  uint64_t server_props[8];
  size_t n = 0, i, k = 0;
  if (pocl_remote_server_info (dev, CL_DEVICE_PARTITION_MAX_SUB_DEVICES,
                              sizeof (max_sub), &max_sub, NULL)
          != CL_SUCCESS
      || max_sub < 2 || used >= POCL_REMOTE_MAX_DEVICES
      || pocl_remote_server_info (dev, CL_DEVICE_PARTITION_PROPERTIES,
                                 sizeof (server_props), server_props, &n)
             != CL_SUCCESS)
    return;
  for (i = 0; i < n / sizeof (uint64_t) && k < 2; ++i)
    if (server_props[i] == CL_DEVICE_PARTITION_EQUALLY
        || server_props[i] == CL_DEVICE_PARTITION_BY_COUNTS)
      props[used][k++] = (cl_device_partition_property)server_props[i];
  if (k == 0)
    return;
  dev->max_sub_devices = max_sub;
  dev->partition_properties = props[used++];
  dev->num_partition_properties = k;
}

/* Queries answered from PoCL's own fields, which this driver set: what the
   remote device implements itself rather than forwards (doc/device-info.md
   says why for each).  */
static const cl_device_info local_queries[] = {
  CL_DEVICE_NAME,
  CL_DEVICE_PLATFORM,
  CL_DEVICE_PARENT_DEVICE,
  CL_DEVICE_REFERENCE_COUNT,
  CL_DEVICE_PARTITION_TYPE,
  CL_DEVICE_PARTITION_MAX_SUB_DEVICES,
  CL_DEVICE_PARTITION_PROPERTIES,
  CL_DEVICE_PARTITION_AFFINITY_DOMAIN,
  CL_DEVICE_EXTENSIONS,
  CL_DEVICE_EXTENSIONS_WITH_VERSION,
  CL_DEVICE_OPENCL_C_FEATURES,
  CL_DEVICE_OPENCL_C_ALL_VERSIONS,
  CL_DEVICE_SVM_CAPABILITIES,
  CL_DEVICE_QUEUE_ON_HOST_PROPERTIES,
  CL_DEVICE_HOST_UNIFIED_MEMORY,
  CL_DEVICE_EXECUTION_CAPABILITIES,
  CL_DEVICE_BUILT_IN_KERNELS,
  CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION,
  CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR,
  CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR,
};

/* clGetDeviceInfo's answer of `size` bytes at v.  */
static cl_int
pocl_remote_getinfo_bytes (const void *v, size_t size,
                           size_t param_value_size, void *param_value,
                           size_t *param_value_size_ret)
{
  POCL_RETURN_GETINFO_SIZE (size, v);
}

/* A query the first DEVICE_INFO did not answer, asked of the server once
   (vendors' queries that this driver does not know); the answer, or its
   absence, is kept.  Returns the entry, or NULL.  */
static const char *
ask_server (cl_device_id dev, cl_device_info param, uint32_t *size)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  remote_server *s = __atomic_load_n (&d->server, __ATOMIC_ACQUIRE);
  pocl_remote_device_info req = { d->server_device, (uint32_t)param };
  void *reply = NULL;
  uint64_t reply_size = 0;
  pocl_remote_info_entry e;
  const char *v;
  unsigned i;

  for (i = 0; i < d->num_absent; ++i)
    if (d->absent[i] == param)
      return NULL;
  if (s == NULL || param == 0
      || pocl_remote_request (s, POCL_RMSG_DEVICE_INFO, &req, sizeof (req),
                              NULL, 0, &reply, &reply_size)
             != CL_SUCCESS)
    {
      free (reply);
      return NULL;
    }
  if (reply_size >= sizeof (e))
    {
      memcpy (&e, reply, sizeof (e));
      if (e.param == param && e.size <= reply_size - sizeof (e))
        keep_info (d, reply, sizeof (e) + e.size);
    }
  free (reply);
  v = find_info (d, param, size);
  if (v == NULL && d->num_absent < POCL_REMOTE_MAX_ABSENT_INFO)
    d->absent[d->num_absent++] = param;
  return v;
}

/* The device op get_device_info_first (patch 0101): every query as the
   server's device answers it, less what remote_features.c hides; PoCL's
   fields for what this driver implements itself.  */
cl_int
pocl_remote_get_device_info_first (cl_device_id dev, cl_device_info param,
                                   size_t param_value_size, void *param_value,
                                   size_t *param_value_size_ret)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  remote_server *srv;
  const char *v;
  uint32_t size = 0;
  size_t i;
  cl_int err;

  switch (param)
    {
    case CL_DEVICE_REMOTE_TRAFFIC_POCL:
      {
        pocl_remote_traffic t;
        srv = __atomic_load_n (&d->server, __ATOMIC_ACQUIRE);
        t.bytes_sent = __atomic_load_n (&srv->bytes_sent, __ATOMIC_RELAXED);
        t.bytes_received
            = __atomic_load_n (&srv->bytes_received, __ATOMIC_RELAXED);
        t.peer_bytes_received
            = __atomic_load_n (&srv->peer_bytes, __ATOMIC_RELAXED);
        POCL_RETURN_GETINFO (pocl_remote_traffic, t);
      }
    case CL_DEVICE_AVAILABLE:
      {
        /* false while the connection is down: commands are still accepted
           then, and run once the session is resumed */
        srv = __atomic_load_n (&d->server, __ATOMIC_ACQUIRE);
        cl_bool up = dev->available
                     && !__atomic_load_n (&srv->down, __ATOMIC_ACQUIRE);
        POCL_RETURN_GETINFO (cl_bool, up);
      }
    }
  for (i = 0; i < sizeof (local_queries) / sizeof (local_queries[0]); ++i)
    if (local_queries[i] == param)
      return POCL_DEVICE_INFO_GENERIC;
  /* a sub-device has the compute units PoCL partitioned it with */
  if (dev->parent_device != NULL && param == CL_DEVICE_MAX_COMPUTE_UNITS)
    return POCL_DEVICE_INFO_GENERIC;
  if (d->usm && param >= CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL
      && param <= CL_DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL)
    return POCL_DEVICE_INFO_GENERIC;
  if (pocl_remote_query_hidden (param))
    return CL_INVALID_VALUE;

  pthread_mutex_lock (&d->info_lock);
  v = find_info (d, param, &size);
  if (v == NULL)
    v = ask_server (dev, param, &size);
  if (v == NULL)
    err = CL_INVALID_VALUE;
  else if (param == CL_DEVICE_OPENCL_C_VERSION && d->c_version_cut
           && size > 11 && memcmp (v, "OpenCL C ", 9) == 0)
    {
      /* "OpenCL C 3.0 vendor info" -> "OpenCL C 1.2 vendor info" */
      char cut[POCL_REMOTE_MAX_C_VERSION];
      const char *rest = memchr (v + 9, ' ', size - 9);
      size_t rest_len = rest ? (size_t)(v + size - rest) : 1;
      if (rest_len + 12 > sizeof (cut))
        rest_len = sizeof (cut) - 12;
      memcpy (cut, "OpenCL C 1.2", 12);
      if (rest)
        memcpy (cut + 12, rest, rest_len);
      else
        cut[12] = 0;
      cut[12 + rest_len - 1] = 0;
      err = pocl_remote_getinfo_bytes (cut, strlen (cut) + 1, param_value_size,
                                       param_value, param_value_size_ret);
    }
  else if (param == CL_DEVICE_IL_VERSION && !d->il)
    err = pocl_remote_getinfo_bytes ("", 1, param_value_size, param_value,
                                     param_value_size_ret);
  else if (param == CL_DEVICE_ILS_WITH_VERSION && !d->il)
    err = pocl_remote_getinfo_bytes ("", 0, param_value_size, param_value,
                                     param_value_size_ret);
  else if (pocl_remote_query_zeroed (dev, param))
    {
      char zero[16] = { 0 };
      err = size <= sizeof (zero)
                ? pocl_remote_getinfo_bytes (zero, size, param_value_size,
                                             param_value, param_value_size_ret)
                : CL_INVALID_VALUE;
    }
  else
    err = pocl_remote_getinfo_bytes (v, size, param_value_size, param_value,
                                     param_value_size_ret);
  pthread_mutex_unlock (&d->info_lock);
  return err;
}
