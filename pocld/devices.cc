// devices.cc - platform/device discovery and the DEVICE_INFO payload.
#include "devices.hh"

#include "decode.hh"

#include "log.hh"
#include "pocl_remote_cpus.h"
#include "wire.hh"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace pocld {

namespace {

// How a device info value travels: as returned, or size_t (and intptr_t
// arrays) widened to uint64.  Pointer-valued params (CL_DEVICE_PLATFORM,
// CL_DEVICE_PARENT_DEVICE) are meaningless to the client and not listed.
enum class Kind { Raw, Size };

struct InfoParam {
  cl_device_info param;
  Kind kind;
};

const InfoParam kParams[] = {
    // OpenCL 1.0 - 1.2
    {CL_DEVICE_TYPE, Kind::Raw},
    {CL_DEVICE_VENDOR_ID, Kind::Raw},
    {CL_DEVICE_MAX_COMPUTE_UNITS, Kind::Raw},
    {CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, Kind::Raw},
    {CL_DEVICE_MAX_WORK_GROUP_SIZE, Kind::Size},
    {CL_DEVICE_MAX_WORK_ITEM_SIZES, Kind::Size},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR, Kind::Raw},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT, Kind::Raw},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT, Kind::Raw},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG, Kind::Raw},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, Kind::Raw},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, Kind::Raw},
    {CL_DEVICE_MAX_CLOCK_FREQUENCY, Kind::Raw},
    {CL_DEVICE_ADDRESS_BITS, Kind::Raw},
    {CL_DEVICE_MAX_READ_IMAGE_ARGS, Kind::Raw},
    {CL_DEVICE_MAX_WRITE_IMAGE_ARGS, Kind::Raw},
    {CL_DEVICE_MAX_MEM_ALLOC_SIZE, Kind::Raw},
    {CL_DEVICE_IMAGE2D_MAX_WIDTH, Kind::Size},
    {CL_DEVICE_IMAGE2D_MAX_HEIGHT, Kind::Size},
    {CL_DEVICE_IMAGE3D_MAX_WIDTH, Kind::Size},
    {CL_DEVICE_IMAGE3D_MAX_HEIGHT, Kind::Size},
    {CL_DEVICE_IMAGE3D_MAX_DEPTH, Kind::Size},
    {CL_DEVICE_IMAGE_SUPPORT, Kind::Raw},
    {CL_DEVICE_MAX_PARAMETER_SIZE, Kind::Size},
    {CL_DEVICE_MAX_SAMPLERS, Kind::Raw},
    {CL_DEVICE_MEM_BASE_ADDR_ALIGN, Kind::Raw},
    {CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE, Kind::Raw},
    {CL_DEVICE_SINGLE_FP_CONFIG, Kind::Raw},
    {CL_DEVICE_GLOBAL_MEM_CACHE_TYPE, Kind::Raw},
    {CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, Kind::Raw},
    {CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, Kind::Raw},
    {CL_DEVICE_GLOBAL_MEM_SIZE, Kind::Raw},
    {CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, Kind::Raw},
    {CL_DEVICE_MAX_CONSTANT_ARGS, Kind::Raw},
    {CL_DEVICE_LOCAL_MEM_TYPE, Kind::Raw},
    {CL_DEVICE_LOCAL_MEM_SIZE, Kind::Raw},
    {CL_DEVICE_ERROR_CORRECTION_SUPPORT, Kind::Raw},
    {CL_DEVICE_PROFILING_TIMER_RESOLUTION, Kind::Size},
    {CL_DEVICE_ENDIAN_LITTLE, Kind::Raw},
    {CL_DEVICE_AVAILABLE, Kind::Raw},
    {CL_DEVICE_COMPILER_AVAILABLE, Kind::Raw},
    {CL_DEVICE_EXECUTION_CAPABILITIES, Kind::Raw},
    {CL_DEVICE_QUEUE_PROPERTIES, Kind::Raw},
    {CL_DEVICE_NAME, Kind::Raw},
    {CL_DEVICE_VENDOR, Kind::Raw},
    {CL_DRIVER_VERSION, Kind::Raw},
    {CL_DEVICE_PROFILE, Kind::Raw},
    {CL_DEVICE_VERSION, Kind::Raw},
    {CL_DEVICE_EXTENSIONS, Kind::Raw},
    {CL_DEVICE_DOUBLE_FP_CONFIG, Kind::Raw},
    {CL_DEVICE_HALF_FP_CONFIG, Kind::Raw},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF, Kind::Raw},
    {CL_DEVICE_HOST_UNIFIED_MEMORY, Kind::Raw},
    {CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR, Kind::Raw},
    {CL_DEVICE_NATIVE_VECTOR_WIDTH_SHORT, Kind::Raw},
    {CL_DEVICE_NATIVE_VECTOR_WIDTH_INT, Kind::Raw},
    {CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG, Kind::Raw},
    {CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, Kind::Raw},
    {CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE, Kind::Raw},
    {CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF, Kind::Raw},
    {CL_DEVICE_OPENCL_C_VERSION, Kind::Raw},
    {CL_DEVICE_LINKER_AVAILABLE, Kind::Raw},
    {CL_DEVICE_BUILT_IN_KERNELS, Kind::Raw},
    {CL_DEVICE_IMAGE_MAX_BUFFER_SIZE, Kind::Size},
    {CL_DEVICE_IMAGE_MAX_ARRAY_SIZE, Kind::Size},
    {CL_DEVICE_PARTITION_MAX_SUB_DEVICES, Kind::Raw},
    {CL_DEVICE_PARTITION_PROPERTIES, Kind::Size},
    {CL_DEVICE_PARTITION_AFFINITY_DOMAIN, Kind::Raw},
    {CL_DEVICE_PARTITION_TYPE, Kind::Size},
    {CL_DEVICE_REFERENCE_COUNT, Kind::Raw},
    {CL_DEVICE_PREFERRED_INTEROP_USER_SYNC, Kind::Raw},
    {CL_DEVICE_PRINTF_BUFFER_SIZE, Kind::Size},
    {CL_DEVICE_SPIR_VERSIONS, Kind::Raw},
    // OpenCL 2.0 - 2.2
    {CL_DEVICE_IMAGE_PITCH_ALIGNMENT, Kind::Raw},
    {CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT, Kind::Raw},
    {CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS, Kind::Raw},
    {CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE, Kind::Size},
    {CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES, Kind::Raw},
    {CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE, Kind::Raw},
    {CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE, Kind::Raw},
    {CL_DEVICE_MAX_ON_DEVICE_QUEUES, Kind::Raw},
    {CL_DEVICE_MAX_ON_DEVICE_EVENTS, Kind::Raw},
    {CL_DEVICE_SVM_CAPABILITIES, Kind::Raw},
    {CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE, Kind::Size},
    {CL_DEVICE_MAX_PIPE_ARGS, Kind::Raw},
    {CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS, Kind::Raw},
    {CL_DEVICE_PIPE_MAX_PACKET_SIZE, Kind::Raw},
    {CL_DEVICE_PREFERRED_PLATFORM_ATOMIC_ALIGNMENT, Kind::Raw},
    {CL_DEVICE_PREFERRED_GLOBAL_ATOMIC_ALIGNMENT, Kind::Raw},
    {CL_DEVICE_PREFERRED_LOCAL_ATOMIC_ALIGNMENT, Kind::Raw},
    {CL_DEVICE_IL_VERSION, Kind::Raw},
    {CL_DEVICE_MAX_NUM_SUB_GROUPS, Kind::Raw},
    {CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS, Kind::Raw},
    // OpenCL 3.0
    {CL_DEVICE_NUMERIC_VERSION, Kind::Raw},
    {CL_DEVICE_EXTENSIONS_WITH_VERSION, Kind::Raw},
    {CL_DEVICE_ILS_WITH_VERSION, Kind::Raw},
    {CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION, Kind::Raw},
    {CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES, Kind::Raw},
    {CL_DEVICE_ATOMIC_FENCE_CAPABILITIES, Kind::Raw},
    {CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT, Kind::Raw},
    {CL_DEVICE_OPENCL_C_ALL_VERSIONS, Kind::Raw},
    {CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, Kind::Size},
    {CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT, Kind::Raw},
    {CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT, Kind::Raw},
    {CL_DEVICE_OPENCL_C_FEATURES, Kind::Raw},
    {CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES, Kind::Raw},
    {CL_DEVICE_PIPE_SUPPORT, Kind::Raw},
    {CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED, Kind::Raw},
    // Extensions' queries, which the client answers from these values
    // (those the device does not answer are left out, as locally).
    {CL_DEVICE_UUID_KHR, Kind::Raw},
    {CL_DRIVER_UUID_KHR, Kind::Raw},
    {CL_DEVICE_LUID_VALID_KHR, Kind::Raw},
    {CL_DEVICE_LUID_KHR, Kind::Raw},
    {CL_DEVICE_NODE_MASK_KHR, Kind::Raw},
    {CL_DEVICE_PCI_BUS_INFO_KHR, Kind::Raw},
    {CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, Kind::Raw},
    {CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, Kind::Raw},
    {CL_DEVICE_REGISTERS_PER_BLOCK_NV, Kind::Raw},
    {CL_DEVICE_WARP_SIZE_NV, Kind::Raw},
    {CL_DEVICE_GPU_OVERLAP_NV, Kind::Raw},
    {CL_DEVICE_KERNEL_EXEC_TIMEOUT_NV, Kind::Raw},
    {CL_DEVICE_INTEGRATED_MEMORY_NV, Kind::Raw},
    // By number: headers older than the extension lack the names.
    {0x1073, Kind::Raw}, // CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR
    {0x1074, Kind::Raw}, // ..._ACCELERATION_PROPERTIES_8BIT_KHR
    {0x1075, Kind::Raw}, // ..._ACCELERATION_PROPERTIES_4x8BIT_PACKED_KHR
    {0x1076, Kind::Raw}, // CL_DEVICE_KERNEL_CLOCK_CAPABILITIES_KHR
    {0x4231, Kind::Raw}, // CL_DEVICE_SINGLE_FP_ATOMIC_CAPABILITIES_EXT
    {0x4232, Kind::Raw}, // CL_DEVICE_DOUBLE_FP_ATOMIC_CAPABILITIES_EXT
    {0x4233, Kind::Raw}, // CL_DEVICE_HALF_FP_ATOMIC_CAPABILITIES_EXT
    {0x4108, Kind::Size}, // CL_DEVICE_SUB_GROUP_SIZES_INTEL
    {0x4250, Kind::Raw}, // CL_DEVICE_IP_VERSION_INTEL
    {0x4251, Kind::Raw}, // CL_DEVICE_ID_INTEL
    {0x4252, Kind::Raw}, // CL_DEVICE_NUM_SLICES_INTEL
    {0x4253, Kind::Raw}, // CL_DEVICE_NUM_SUB_SLICES_PER_SLICE_INTEL
    {0x4254, Kind::Raw}, // CL_DEVICE_NUM_EUS_PER_SUB_SLICE_INTEL
    {0x4255, Kind::Raw}, // CL_DEVICE_NUM_THREADS_PER_EU_INTEL
    {0x4256, Kind::Raw}, // CL_DEVICE_FEATURE_CAPABILITIES_INTEL
    {0x4190, Kind::Raw}, // CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL
    {0x4191, Kind::Raw}, // CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL
    {0x4192, Kind::Raw}, // ..._SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL
    {0x4193, Kind::Raw}, // ..._CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL
    {0x4194, Kind::Raw}, // CL_DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL
};

// Queries whose value is an object of this process: never sent.
bool handle_valued(cl_device_info param)
{
  return param == CL_DEVICE_PLATFORM || param == CL_DEVICE_PARENT_DEVICE;
}

void append(std::vector<uint8_t> &v, const void *p, size_t n)
{
  const uint8_t *b = static_cast<const uint8_t *>(p);
  v.insert(v.end(), b, b + n);
}

// Appends the entry of one query, if the device answers it.
void append_entry(std::vector<uint8_t> &out, std::vector<uint8_t> &val,
                  cl_device_id dev, const InfoParam &p)
{
  size_t size = 0;
  if (handle_valued(p.param) ||
      clGetDeviceInfo(dev, p.param, 0, nullptr, &size) != CL_SUCCESS ||
      size > POCL_REMOTE_MAX_STRING)
    return;
  val.resize(size);
  if (size > 0 &&
      clGetDeviceInfo(dev, p.param, size, val.data(), nullptr) != CL_SUCCESS)
    return;
  pocl_remote_info_entry e;
  e.param = p.param;
  if (p.kind == Kind::Size) {
    size_t n = size / sizeof(size_t);
    e.size = static_cast<uint32_t>(n * sizeof(uint64_t));
    append(out, &e, sizeof e);
    for (size_t i = 0; i < n; ++i) {
      uint64_t w = load<size_t>(val.data() + i * sizeof(size_t));
      append(out, &w, sizeof w);
    }
  } else {
    e.size = static_cast<uint32_t>(size);
    append(out, &e, sizeof e);
    append(out, val.data(), size);
  }
}

// Every param of kParams the device answers, as pocl_remote_info_entry +
// value.
std::vector<uint8_t> info_payload(cl_device_id dev)
{
  std::vector<uint8_t> out;
  std::vector<uint8_t> val;
  for (const InfoParam &p : kParams)
    append_entry(out, val, dev, p);
  return out;
}

// POCL_REMOTE_INFO_IMAGE_FORMATS entries: what clGetSupportedImageFormats
// answers in a context of this device alone, per image type.
void append_image_formats(std::vector<uint8_t> &out, cl_device_id dev)
{
  cl_bool images = CL_FALSE;
  clGetDeviceInfo(dev, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images,
                  nullptr);
  if (!images)
    return;
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  if (ctx == nullptr)
    return;
  const cl_mem_object_type types[] = {
      CL_MEM_OBJECT_IMAGE2D,       CL_MEM_OBJECT_IMAGE3D,
      CL_MEM_OBJECT_IMAGE2D_ARRAY, CL_MEM_OBJECT_IMAGE1D,
      CL_MEM_OBJECT_IMAGE1D_ARRAY, CL_MEM_OBJECT_IMAGE1D_BUFFER};
  std::vector<cl_image_format> formats;
  for (cl_mem_object_type t : types) {
    cl_uint n = 0;
    if (clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, t, 0, nullptr, &n) !=
            CL_SUCCESS ||
        n == 0 || n > POCL_REMOTE_MAX_STRING / 8)
      continue;
    formats.resize(n);
    if (clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, t, n, formats.data(),
                                   nullptr) != CL_SUCCESS)
      continue;
    pocl_remote_info_entry e{POCL_REMOTE_INFO_IMAGE_FORMATS(t), n * 8};
    append(out, &e, sizeof e);
    for (const cl_image_format &f : formats) {
      uint32_t pair[2] = {f.image_channel_order, f.image_channel_data_type};
      append(out, pair, sizeof pair);
    }
  }
  clReleaseContext(ctx);
}

std::atomic<bool> g_probe_called[POCL_REMOTE_MAX_DEVICES];

void CL_CALLBACK probe_callback(cl_event, cl_int, void *flag)
{
  static_cast<std::atomic<bool> *>(flag)->store(true);
}

// Does the platform call a CL_COMPLETE callback for a command that failed
// because its wait list did?  Answered with a marker behind a user event
// set to an error.  The flag is static: a late callback must find it.
bool failure_callbacks(cl_device_id dev, std::atomic<bool> &called)
{
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  if (ctx == nullptr)
    return true;
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  cl_event ue = clCreateUserEvent(ctx, &err);
  cl_event marker = nullptr;
  if (q != nullptr && ue != nullptr &&
      clEnqueueMarkerWithWaitList(q, 1, &ue, &marker) == CL_SUCCESS &&
      clSetEventCallback(marker, CL_COMPLETE, probe_callback, &called) ==
          CL_SUCCESS) {
    clSetUserEventStatus(ue, CL_INVALID_OPERATION);
    clWaitForEvents(1, &marker);
    // Runtimes may deliver callbacks from their own thread, a bit later.
    for (int i = 0; i < 50 && !called.load(); ++i)
      usleep(5000);
  } else
    called = true;
  if (marker != nullptr)
    clReleaseEvent(marker);
  if (ue != nullptr)
    clReleaseEvent(ue);
  if (q != nullptr)
    clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return called.load();
}

std::string device_string(cl_device_id dev, cl_device_info param)
{
  size_t size = 0;
  if (clGetDeviceInfo(dev, param, 0, nullptr, &size) != CL_SUCCESS || size == 0)
    return {};
  std::string s(size, '\0');
  if (clGetDeviceInfo(dev, param, size, &s[0], nullptr) != CL_SUCCESS)
    return {};
  s.resize(s.find('\0') == std::string::npos ? size : s.find('\0'));
  return s;
}

// "OpenCL <major>.<minor> ..." as in CL_PLATFORM_VERSION / CL_DEVICE_VERSION.
void parse_version(const std::string &s, int &major, int &minor)
{
  major = 1;
  minor = 0;
  if (sscanf(s.c_str(), "OpenCL %d.%d", &major, &minor) != 2) {
    major = 1;
    minor = 0;
  }
}

bool at_least_2_1(int major, int minor)
{
  return major > 2 || (major == 2 && minor >= 1);
}

// clGetDeviceAndHostTimer exists in the platform's dispatch table only from
// OpenCL 2.1 on, and 3.0 platforms report 0 resolution when they lack it.
bool platform_host_timer(cl_platform_id p)
{
  size_t size = 0;
  if (clGetPlatformInfo(p, CL_PLATFORM_VERSION, 0, nullptr, &size) !=
          CL_SUCCESS ||
      size == 0)
    return false;
  std::string v(size, '\0');
  if (clGetPlatformInfo(p, CL_PLATFORM_VERSION, size, &v[0], nullptr) !=
      CL_SUCCESS)
    return false;
  int major, minor;
  parse_version(v, major, minor);
  if (!at_least_2_1(major, minor))
    return false;
  cl_ulong res = 0;
  return clGetPlatformInfo(p, CL_PLATFORM_HOST_TIMER_RESOLUTION, sizeof res,
                           &res, nullptr) == CL_SUCCESS &&
         res != 0;
}

std::string platform_string(cl_platform_id p, cl_platform_info param)
{
  size_t size = 0;
  if (clGetPlatformInfo(p, param, 0, nullptr, &size) != CL_SUCCESS ||
      size == 0 || size > POCL_REMOTE_MAX_STRING)
    return {};
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, param, size, &s[0], nullptr) != CL_SUCCESS)
    return {};
  s.resize(s.find('\0') == std::string::npos ? size : s.find('\0'));
  return s;
}

// True for NVIDIA's platform, unless the environment variable `var` is `on`
// (true) or `off` (false): Platform::wait_completion (POCLD_COMPLETION) and
// Platform::pin_staging (POCLD_STAGING).
bool nvidia_unless(cl_platform_id p, const char *var, const char *on,
                   const char *off)
{
  const char *env = getenv(var);
  if (env != nullptr && strcmp(env, off) == 0)
    return false;
  if (env != nullptr && strcmp(env, on) == 0)
    return true;
  return platform_string(p, CL_PLATFORM_VENDOR).find("NVIDIA") !=
         std::string::npos;
}

std::string platform_key(size_t index, cl_platform_id p, cl_uint nd)
{
  std::string k =
      std::to_string(index) + "|" + platform_string(p, CL_PLATFORM_NAME) + "|" +
      platform_string(p, CL_PLATFORM_VENDOR) + "|" +
      platform_string(p, CL_PLATFORM_VERSION) + "|" + std::to_string(nd);
  // One line of text (format_hints).
  for (char &c : k)
    if (c == '\n' || c == '\r')
      c = ' ';
  return k;
}

} // namespace

std::vector<uint8_t> one_info_entry(cl_device_id dev, uint32_t param)
{
  std::vector<uint8_t> out;
  std::vector<uint8_t> val;
  InfoParam p{param, Kind::Raw};
  for (const InfoParam &k : kParams)
    if (k.param == param)
      p = k;
  append_entry(out, val, dev, p);
  return out;
}

std::string format_hints(const std::vector<PlatformHint> &hints)
{
  std::string out;
  for (const PlatformHint &h : hints)
    out += std::string(h.silent_failures ? "1 " : "0 ") + h.key + "\n";
  return out;
}

std::vector<PlatformHint> parse_hints(const std::string &text)
{
  std::vector<PlatformHint> hints;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      break; // an unfinished line: the writer did not get to its end
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() > 2 && (line[0] == '0' || line[0] == '1') && line[1] == ' ')
      hints.push_back({line.substr(2), line[0] == '1'});
  }
  return hints;
}

namespace {

// One device of a platform into the server's list.
Device make_device(const Platform &p, uint32_t platform, cl_uint i,
                   bool host_timer)
{
  Device dev;
  dev.id = p.devices[i];
  dev.platform = platform;
  dev.index_in_platform = i;
  cl_ulong max_alloc = 0;
  clGetDeviceInfo(dev.id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                  &max_alloc, nullptr);
  dev.max_alloc = max_alloc;
  cl_device_type type = 0;
  clGetDeviceInfo(dev.id, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
  dev.gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  dev.cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  cl_uint align_bits = 8;
  clGetDeviceInfo(dev.id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits,
                  &align_bits, nullptr);
  dev.base_align = align_bits >= 8 ? align_bits / 8 : 1;
  parse_version(device_string(dev.id, CL_DEVICE_VERSION), dev.cl_major,
                dev.cl_minor);
  dev.host_timer = host_timer && at_least_2_1(dev.cl_major, dev.cl_minor);
  dev.name = device_string(dev.id, CL_DEVICE_NAME);
  dev.il = device_string(dev.id, CL_DEVICE_IL_VERSION).find("SPIR-V") !=
           std::string::npos;
  std::string bin_key = platform_string(p.id, CL_PLATFORM_NAME) + '\n' +
                        platform_string(p.id, CL_PLATFORM_VERSION) + '\n' +
                        dev.name + '\n' +
                        device_string(dev.id, CL_DEVICE_VERSION) + '\n' +
                        device_string(dev.id, CL_DRIVER_VERSION);
  dev.binary_key = fnv1a(bin_key.data(), bin_key.size());
  dev.info = info_payload(dev.id);
  append_image_formats(dev.info, dev.id);
  // Devices of one platform share a context: the client migrates
  // between them with native copies.
  pocl_remote_info_entry pe{POCL_REMOTE_INFO_PLATFORM_INDEX, 4};
  append(dev.info, &pe, sizeof pe);
  append(dev.info, &dev.platform, sizeof dev.platform);
  return dev;
}

// The platform's devices of `type`, none on an error (CL_DEVICE_NOT_FOUND).
std::vector<cl_device_id> platform_devices(cl_platform_id pid,
                                           cl_device_type type)
{
  cl_uint n = 0;
  if (clGetDeviceIDs(pid, type, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return {};
  std::vector<cl_device_id> ids(n);
  if (clGetDeviceIDs(pid, type, n, ids.data(), nullptr) != CL_SUCCESS)
    return {};
  return ids;
}

} // namespace

Devices discover_devices(const char *sid, bool verbose,
                         const std::vector<PlatformHint> &hints,
                         std::vector<PlatformHint> *learnt)
{
  const Level info = verbose ? Level::Info : Level::Debug;
  Devices d;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err != CL_SUCCESS || np == 0) {
    LOG_WARN(sid, "no OpenCL platforms (error %d)", err);
    return d;
  }
  std::vector<cl_platform_id> pids(np);
  clGetPlatformIDs(np, pids.data(), nullptr);
  // CUSTOM devices (which CL_DEVICE_TYPE_ALL excludes) of each platform,
  // listed after every platform's other devices: (platform, index in it).
  std::vector<std::pair<uint32_t, cl_uint>> custom;
  size_t listed = 0;
  // One platform's devices (`regular` of them, then CUSTOM ones) into d.
  auto add = [&](cl_platform_id pid, std::vector<cl_device_id> all,
                 size_t regular) {
    if (listed + all.size() > POCL_REMOTE_MAX_DEVICES) {
      LOG_WARN(sid, "device limit %u reached, ignoring the rest",
               POCL_REMOTE_MAX_DEVICES);
      return false;
    }
    listed += all.size();
    cl_uint nd = static_cast<cl_uint>(all.size());
    Platform p;
    p.id = pid;
    p.devices = std::move(all);
    p.first_device = static_cast<uint32_t>(d.devices.size());
    bool host_timer = platform_host_timer(pid);
    std::string key = platform_key(d.platforms.size(), pid, nd);
    const PlatformHint *hint = nullptr;
    for (const PlatformHint &h : hints)
      if (h.key == key)
        hint = &h;
    p.silent_failures =
        hint ? hint->silent_failures
             : !failure_callbacks(p.devices[0],
                                  g_probe_called[d.platforms.size()]);
    if (learnt != nullptr)
      learnt->push_back({key, p.silent_failures});
    // Other platforms run their callbacks on the device's own threads (PoCL's
    // CPU drivers: the worker that ran the command), where pocld's
    // completion and its COMPLETION's send delay the device's next command:
    // waited for instead on machines with cores to spare, a 100-kernel
    // chain over Ubuntu's PoCL 5 CPU device went from 1.32x to 1.01-1.03x
    // native + round trip (an H100 host, 16 CPUs).  On two CPUs the waiter
    // would be one more thread to wake per completion.
    p.wait_completion =
        nvidia_unless(pid, "POCLD_COMPLETION", "wait", "callback") ||
        (getenv("POCLD_COMPLETION") == nullptr &&
         pocl_remote_usable_cpus() > 2);
    if (p.wait_completion)
      POCLD_LOG(info, sid,
                "platform %zu: completions noticed by waiting, not callbacks",
                d.platforms.size());
    p.pin_staging = nvidia_unless(pid, "POCLD_STAGING", "pinned", "pageable");
    if (p.pin_staging)
      POCLD_LOG(info, sid,
                "platform %zu: large transfers staged in pinned memory",
                d.platforms.size());
    if (p.silent_failures)
      POCLD_LOG(info, sid,
                "platform %zu does not call back for failed commands, "
                "pocld looks for them itself",
                d.platforms.size());
    uint32_t pi = static_cast<uint32_t>(d.platforms.size());
    for (cl_uint i = 0; i < nd; ++i) {
      if (i >= regular) {
        custom.emplace_back(pi, i);
        continue;
      }
      d.devices.push_back(make_device(p, pi, i, host_timer));
      POCLD_LOG(info, sid, "device %zu: %s (OpenCL %d.%d)",
                d.devices.size() - 1, d.devices.back().name.c_str(),
                d.devices.back().cl_major, d.devices.back().cl_minor);
    }
    d.platforms.push_back(std::move(p));
    return true;
  };
  // POCLD_CONTEXT_PER_DEVICE=1 (tests): every device in a platform, and so
  // a native context, of its own, as devices of two OpenCL implementations
  // are (tests/remote/cross_platform.cmake).
  const char *split = getenv("POCLD_CONTEXT_PER_DEVICE");
  const bool per_device = split != nullptr && strcmp(split, "1") == 0;
  for (cl_platform_id pid : pids) {
    std::vector<cl_device_id> all = platform_devices(pid, CL_DEVICE_TYPE_ALL);
    size_t regular = all.size();
    // A runtime that lists them under ALL too has them there already.
    for (cl_device_id c : platform_devices(pid, CL_DEVICE_TYPE_CUSTOM))
      if (std::find(all.begin(), all.begin() + regular, c) ==
          all.begin() + regular)
        all.push_back(c);
    if (all.empty()) {
      POCLD_LOG(info, sid, "skipping a platform without devices");
      continue;
    }
    bool room = true;
    if (!per_device)
      room = add(pid, std::move(all), regular);
    for (size_t i = 0; per_device && room && i < all.size(); ++i)
      room = add(pid, {all[i]}, i < regular ? 1 : 0);
    if (!room)
      break;
  }
  for (const auto &c : custom) {
    const Platform &p = d.platforms[c.first];
    d.devices.push_back(
        make_device(p, c.first, c.second, platform_host_timer(p.id)));
    POCLD_LOG(info, sid, "device %zu: %s (custom, OpenCL %d.%d)",
              d.devices.size() - 1, d.devices.back().name.c_str(),
              d.devices.back().cl_major, d.devices.back().cl_minor);
  }
  return d;
}

} // namespace pocld
