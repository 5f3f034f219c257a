// built_programs.cc - see built_programs.hh.
#include "built_programs.hh"

namespace pocld {

bool BuiltPrograms::shareable_source(const uint8_t *src, size_t len)
{
  const std::string_view text(reinterpret_cast<const char *>(src), len);
  for (const char *word :
       {"include", "import", "__FILE__", "__DATE__", "__TIME__"})
    if (text.find(word) != std::string_view::npos)
      return false;
  return true;
}

std::string BuiltPrograms::key(uint32_t device, const uint8_t *opts,
                               size_t opts_len, const uint8_t *src,
                               size_t src_len)
{
  // Device, option length and options, then the source: no two inputs give
  // the same key.
  std::string k;
  k.reserve(sizeof device + sizeof opts_len + opts_len + src_len);
  k.append(reinterpret_cast<const char *>(&device), sizeof device);
  k.append(reinterpret_cast<const char *>(&opts_len), sizeof opts_len);
  k.append(reinterpret_cast<const char *>(opts), opts_len);
  k.append(reinterpret_cast<const char *>(src), src_len);
  return k;
}

const BuiltPrograms::Entry *BuiltPrograms::find(const std::string &key)
{
  if (index_.empty())
    return nullptr;
  auto it = index_.find(key);
  if (it == index_.end())
    return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->entry;
}

void BuiltPrograms::keep(std::string key, cl_program p, cl_device_id dev,
                         bool cl_2, const std::vector<uint8_t> &reply)
{
  // An OpenCL 1.x device has no program-scope variables but constants; on a
  // later one, a program whose runtime cannot say is not shared.
  if (cl_2) {
    size_t globals = 1;
    if (clGetProgramBuildInfo(
            p, dev, CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE, sizeof globals,
            &globals, nullptr) != CL_SUCCESS ||
        globals != 0)
      return;
  }
  const size_t bytes = key.size() + reply.size();
  if (bytes > kMaxBytes / 4)
    return;
  while (!lru_.empty() &&
         (lru_.size() >= kMaxEntries || bytes_ + bytes > kMaxBytes))
    drop_last();
  clRetainProgram(p);
  lru_.push_front(Slot{std::move(key), Entry{p, reply}});
  index_.emplace(lru_.front().key, lru_.begin());
  bytes_ += bytes;
}

void BuiltPrograms::drop_last()
{
  Slot &s = lru_.back();
  index_.erase(s.key);
  bytes_ -= s.key.size() + s.entry.reply.size();
  clReleaseProgram(s.entry.program);
  lru_.pop_back();
}

void BuiltPrograms::clear()
{
  while (!lru_.empty())
    drop_last();
}

} // namespace pocld
