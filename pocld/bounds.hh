// bounds.hh - checks of a command's offsets and regions against its
// objects, made before anything is sized by them (commands.cc,
// staged_copy.cc).
#pragma once

#include "session.hh"
#include "wire.hh"

namespace pocld {

inline bool in_bounds(const Mem &m, uint64_t offset, uint64_t size)
{
  uint64_t end;
  return add_ok(offset, size, end) && end <= m.size;
}

inline bool volume(const uint64_t r[3], uint64_t unit, uint64_t &out)
{
  return mul_ok(r[0], r[1], out) && mul_ok(out, r[2], out) &&
         mul_ok(out, unit, out);
}

// A rectangle of a buffer lies inside it (pitches 0: packed, as in OpenCL).
// Checked before staging memory is sized by the client's region.
inline bool rect_in_bounds(const Mem &m, const uint64_t o[3],
                           const uint64_t r[3], uint64_t row, uint64_t slice)
{
  if (r[0] == 0 || r[1] == 0 || r[2] == 0)
    return false;
  if (row == 0)
    row = r[0];
  if (slice == 0 && !mul_ok(row, r[1], slice))
    return false;
  uint64_t a, b, c, first, d, e, last;
  return mul_ok(o[2], slice, a) && mul_ok(o[1], row, b) && add_ok(a, b, c) &&
         add_ok(c, o[0], first) && mul_ok(r[2] - 1, slice, d) &&
         mul_ok(r[1] - 1, row, e) && add_ok(first, d, last) &&
         add_ok(last, e, last) && add_ok(last, r[0], last) && last <= m.size;
}

// An image region lies inside the image.
inline bool image_in_bounds(const Mem &m, const uint64_t o[3],
                            const uint64_t r[3])
{
  for (int i = 0; i < 3; ++i) {
    uint64_t end;
    if (!add_ok(o[i], r[i], end) || end > m.extent[i])
      return false;
  }
  return true;
}

} // namespace pocld
