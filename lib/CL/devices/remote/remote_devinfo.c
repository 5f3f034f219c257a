/* remote_devinfo.c - the device's properties as its server reports them
   (DEVICE_INFO): the fields PoCL keeps, the image formats, the entries PoCL
   has no field for (answered by get_device_info_ext), and the partitioning
   the server's device offers.  */

#include <stddef.h>
#include <string.h>

#include "pocl_image_util.h"
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

static void keep_other_info (cl_device_id dev, const char *entry, uint64_t n);

/* Applies a DEVICE_INFO reply: entries of (param, size, value).  */
void
pocl_remote_apply_device_info (cl_device_id dev, const char *p, uint64_t len,
                               char **name)
{
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
      else if (e.param == CL_DEVICE_OPENCL_C_VERSION)
        ((remote_device_data *)dev->data)->opencl_c_version
            = dup_string (v, e.size);
      else if (e.param == POCL_REMOTE_INFO_PLATFORM_INDEX && e.size == 4)
        memcpy (&((remote_device_data *)dev->data)->platform, v, 4);
      else if ((e.param & 0xFF000000u) == POCL_REMOTE_INFO_IMAGE_FORMATS (0))
        store_image_formats (dev, e.param & 0xFFFFFFu, v, e.size);
      else
        {
          for (i = 0; i < sizeof (info_fields) / sizeof (info_fields[0]);
               ++i)
            if (info_fields[i].param == e.param)
              {
                store_field (dev, &info_fields[i], v, e.size);
                break;
              }
          if (i == sizeof (info_fields) / sizeof (info_fields[0]))
            keep_other_info (dev, v - sizeof (e), sizeof (e) + e.size);
        }
    }
}

/* An entry PoCL has no field for, kept for get_device_info_ext.  */
static void
keep_other_info (cl_device_id dev, const char *entry, uint64_t n)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  char *grown = realloc (d->other_info, d->other_info_len + n);
  if (grown == NULL)
    return;
  memcpy (grown + d->other_info_len, entry, n);
  d->other_info = grown;
  d->other_info_len += n;
}

/* The server's value of an entry kept by keep_other_info.  */
cl_int
pocl_remote_other_info (cl_device_id dev, cl_device_info param,
                        size_t param_value_size, void *param_value,
                        size_t *param_value_size_ret)
{
  remote_device_data *d = (remote_device_data *)dev->data;
  uint64_t pos = 0;
  while (d->other_info != NULL && pos < d->other_info_len)
    {
      pocl_remote_info_entry e;
      memcpy (&e, d->other_info + pos, sizeof (e));
      pos += sizeof (e);
      if (e.param == param)
        POCL_RETURN_GETINFO_SIZE ((size_t)e.size, d->other_info + pos);
      pos += e.size;
    }
  return CL_INVALID_VALUE;
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
  if (pocl_remote_other_info (dev, CL_DEVICE_PARTITION_MAX_SUB_DEVICES,
                              sizeof (max_sub), &max_sub, NULL)
          != CL_SUCCESS
      || max_sub < 2 || used >= POCL_REMOTE_MAX_DEVICES
      || pocl_remote_other_info (dev, CL_DEVICE_PARTITION_PROPERTIES,
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
