// devices.hh - the server's OpenCL platforms and devices.
#pragma once

#include "cl.hh"

#include <cstdint>
#include <string>
#include <vector>

namespace pocld {

struct Platform {
  cl_platform_id id;
  // Its devices of CL_DEVICE_TYPE_ALL in server device-list order, then its
  // CUSTOM devices, which the server lists after all platforms' others.
  std::vector<cl_device_id> devices;
  uint32_t first_device; // server index of devices[0]
  // CL_COMPLETE callbacks are not called for commands that fail (PoCL 3.1
  // does this when a dependency failed); sessions then find such commands
  // themselves after failing a user event (Completions::sweep_failed).
  bool silent_failures;
  // Completion of commands that cannot wait on the client (Pending::gated)
  // is noticed by a session thread waiting natively, not by an event
  // callback: NVIDIA's callbacks come about 16 us after the command
  // completed (29.8 us for a no-op against 13.2 us under clWaitForEvents,
  // measured on an H200).  POCLD_COMPLETION=callback|wait overrides.
  bool wait_completion;
  // Large transfers are staged in page-locked memory (Staging, Pinning):
  // NVIDIA's OpenCL copies pageable memory once more, through a buffer of
  // its own.  POCLD_STAGING=pinned|pageable overrides.
  bool pin_staging;
};

struct Device {
  cl_device_id id;
  uint32_t platform; // index into Devices::platforms
  uint32_t index_in_platform;
  uint64_t max_alloc;     // CL_DEVICE_MAX_MEM_ALLOC_SIZE
  uint64_t base_align;    // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes
  int cl_major, cl_minor; // from CL_DEVICE_VERSION
  bool host_timer;        // clGetDeviceAndHostTimer is usable
  bool gpu;               // CL_DEVICE_TYPE_GPU: pocld picks local sizes
  bool cpu;               // CL_DEVICE_TYPE_CPU: its memory is the host's
  bool il;                // CL_DEVICE_IL_VERSION names SPIR-V
  std::string name;
  // Names the platform and device in the binaries this server hands out
  // (pocl_remote_binary_header): a binary with another key is refused.
  uint64_t binary_key;
  // The DEVICE_INFO reply payload, built once: device info never changes.
  std::vector<uint8_t> info;
};

struct Devices {
  std::vector<Platform> platforms;
  std::vector<Device> devices;
};

// What one discovery learnt about a platform that costs time to find out
// (the silent_failures probe waits 250 ms on platforms that never call
// back), for later discoveries in other processes to reuse.  `key` names the
// platform: its position, name, vendor, version and device count.
struct PlatformHint {
  std::string key;
  bool silent_failures;
};

// All devices of all platforms, in platform order, then the CUSTOM devices
// of all platforms (CL_DEVICE_TYPE_ALL excludes them), in platform order, so
// that adding one moves no other device's index.  Platforms without devices
// are skipped; at most POCL_REMOTE_MAX_DEVICES devices.  What is
// found is logged at info level when `verbose`, else at debug level.  A
// platform whose key is in `hints` is not probed again; `learnt` (if not
// null) gets the hints of every platform found.
Devices discover_devices(const char *sid, bool verbose,
                         const std::vector<PlatformHint> &hints,
                         std::vector<PlatformHint> *learnt);

// The DEVICE_INFO entry of one query (a pocl_remote_info_entry and the
// value), or nothing where the device does not answer it.
std::vector<uint8_t> one_info_entry(cl_device_id dev, uint32_t param);

// Hints as text (one line per platform) and back; parsing skips bad lines.
std::string format_hints(const std::vector<PlatformHint> &hints);
std::vector<PlatformHint> parse_hints(const std::string &text);

} // namespace pocld
