/* pocl_remote_pixel.h - the size of an image pixel, in which the image
   transfers of the wire protocol measure their data (READ_IMAGE and
   WRITE_IMAGE: data_size = region volume * pixel size; the region's first
   axis counts pixels).  The client driver and pocld both size image data
   with this one function: a format it gives 0 for is not moved, so the
   client does not advertise it and pocld refuses to create such images.

   The sizes are OpenCL's (the CTS's get_pixel_size): the channel count of
   the order times the size of the channel type, and the whole pixel for the
   packed types.  */

#ifndef POCL_REMOTE_PIXEL_H
#define POCL_REMOTE_PIXEL_H

#include <stdint.h>

#include <CL/cl.h>

static inline uint32_t
pocl_remote_pixel_size (uint32_t order, uint32_t type)
{
  uint32_t bytes;
  switch (type)
    {
    case CL_UNORM_SHORT_565:
    case CL_UNORM_SHORT_555:
      return order == CL_RGB || order == CL_RGBx ? 2 : 0;
    case CL_UNORM_INT_101010:
      return order == CL_RGB || order == CL_RGBx ? 4 : 0;
    case CL_UNORM_INT_101010_2:
      return order == CL_RGBA ? 4 : 0;
    case CL_SNORM_INT8:
    case CL_UNORM_INT8:
    case CL_SIGNED_INT8:
    case CL_UNSIGNED_INT8:
      bytes = 1;
      break;
    case CL_SNORM_INT16:
    case CL_UNORM_INT16:
    case CL_SIGNED_INT16:
    case CL_UNSIGNED_INT16:
    case CL_HALF_FLOAT:
      bytes = 2;
      break;
    case CL_SIGNED_INT32:
    case CL_UNSIGNED_INT32:
    case CL_FLOAT:
      bytes = 4;
      break;
    default:
      return 0;
    }
  switch (order)
    {
    case CL_R:
    case CL_A:
    case CL_Rx:
    case CL_INTENSITY:
    case CL_LUMINANCE:
    case CL_DEPTH:
      return bytes;
    case CL_RG:
    case CL_RA:
    case CL_RGx:
      return 2 * bytes;
    case CL_sRGB:
    case CL_sRGBx:
      return 3 * bytes;
    case CL_RGBA:
    case CL_ARGB:
    case CL_BGRA:
    case CL_ABGR:
    case CL_sRGBA:
    case CL_sBGRA:
      return 4 * bytes;
    default:
      return 0;
    }
}

#endif
