// cl.hh - the OpenCL headers.  CMakeLists.txt defines
// CL_TARGET_OPENCL_VERSION=300 and CL_USE_DEPRECATED_OPENCL_1_2_APIS: pocld
// uses only APIs that OpenCL 1.2 platforms export (clCreateCommandQueue,
// clCreateSampler), plus clGetDeviceAndHostTimer where a platform says it
// has it.
#pragma once

#include <CL/cl.h>
#include <CL/cl_ext.h>
