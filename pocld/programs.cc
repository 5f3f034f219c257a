// programs.cc - BUILD_PROGRAM (with kernel metadata), GET_PROGRAM_BINARY
// and CREATE_KERNEL.
#include "session.hh"

#include "built_programs.hh"
#include "includes.hh"

#include "log.hh"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace pocld {

namespace {

// pocl_argument_type values, as the client's kernel metadata expects them.
enum ArgType : uint32_t {
  kArgNone = 0,
  kArgPointer = 1,
  kArgImage = 2,
  kArgSampler = 3,
  kArgPipe = 4
};
constexpr size_t kMaxTrialArgSize = 128;

void append(std::vector<uint8_t> &v, const void *p, size_t n)
{
  const uint8_t *b = static_cast<const uint8_t *>(p);
  v.insert(v.end(), b, b + n);
}

// A string-valued query without its terminating NUL; empty on error.
template <class Query> std::string get_string(Query q)
{
  size_t size = 0;
  if (q(0, nullptr, &size) != CL_SUCCESS || size == 0)
    return {};
  std::string s(size, '\0');
  if (q(size, &s[0], nullptr) != CL_SUCCESS)
    return {};
  s.resize(std::min(s.find('\0'), size));
  return s;
}

// The argument's size, found by offering every size up to 128 bytes: the
// API has no query for it.  The largest accepted size wins, because
// runtimes may also accept the size of a 3-vector for its 4-vector storage
// (PoCL takes 3 for int, 12 for int3).  0 when every size passes: that
// runtime does not check.
uint32_t trial_size(cl_kernel k, cl_uint i)
{
  static const uint8_t zeros[kMaxTrialArgSize] = {};
  uint32_t found = 0, hits = 0;
  for (size_t s = 1; s <= kMaxTrialArgSize; ++s)
    if (clSetKernelArg(k, i, s, zeros) == CL_SUCCESS) {
      found = static_cast<uint32_t>(s);
      ++hits;
    }
  return hits == kMaxTrialArgSize ? 0 : found;
}

struct ArgInfo {
  cl_kernel_arg_address_qualifier aq = CL_KERNEL_ARG_ADDRESS_PRIVATE;
  cl_kernel_arg_access_qualifier acc = CL_KERNEL_ARG_ACCESS_NONE;
  cl_kernel_arg_type_qualifier tq = 0;
  uint32_t type = kArgNone;
  std::string type_name, name;
};

// What kind of argument i is, as PoCL's proxy driver tells it: image if it
// has an access qualifier, pipe, sampler_t, pointer if the type ends in '*'
// or lives in local memory, else a scalar.
ArgInfo classify_arg(cl_kernel k, cl_uint i)
{
  ArgInfo a;
  if (clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof a.aq,
                         &a.aq, nullptr) != CL_SUCCESS) {
    // CL_KERNEL_ARG_INFO_NOT_AVAILABLE: tell the kinds apart by what
    // clSetKernelArg accepts.  A local pointer takes a size without a value
    // and refuses a value; a global one takes a NULL buffer; a scalar needs
    // its value.  (NVIDIA also takes a 1-byte NULL for a global pointer, so
    // the value test comes first.)  Images and samplers pass for scalars.
    cl_mem none = nullptr;
    if (clSetKernelArg(k, i, sizeof(cl_mem), &none) == CL_INVALID_ARG_VALUE &&
        clSetKernelArg(k, i, 1, nullptr) == CL_SUCCESS) {
      a.aq = CL_KERNEL_ARG_ADDRESS_LOCAL;
      a.type = kArgPointer;
    } else if (clSetKernelArg(k, i, sizeof(cl_mem), nullptr) == CL_SUCCESS) {
      a.aq = CL_KERNEL_ARG_ADDRESS_GLOBAL;
      a.type = kArgPointer;
    }
    return a;
  }
  clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ACCESS_QUALIFIER, sizeof a.acc, &a.acc,
                     nullptr);
  clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof a.tq, &a.tq,
                     nullptr);
  a.type_name = get_string([&](size_t n, void *v, size_t *r) {
    return clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, n, v, r);
  });
  a.name = get_string([&](size_t n, void *v, size_t *r) {
    return clGetKernelArgInfo(k, i, CL_KERNEL_ARG_NAME, n, v, r);
  });
  if (a.tq & CL_KERNEL_ARG_TYPE_PIPE)
    a.type = kArgPipe;
  else if (a.acc != CL_KERNEL_ARG_ACCESS_NONE)
    a.type = kArgImage;
  else if (a.type_name.compare(0, 9, "sampler_t") == 0)
    a.type = kArgSampler;
  else if ((!a.type_name.empty() && a.type_name.back() == '*') ||
           a.aq == CL_KERNEL_ARG_ADDRESS_LOCAL)
    a.type = kArgPointer;
  return a;
}

void arg_meta(std::vector<uint8_t> &out, cl_kernel k, cl_uint i)
{
  ArgInfo a = classify_arg(k, i);
  pocl_remote_arg_meta am{};
  am.type = a.type;
  switch (a.type) {
  case kArgNone:
    am.type_size = trial_size(k, i);
    break;
  case kArgSampler:
    am.type_size = sizeof(cl_sampler);
    break;
  default:
    am.type_size = sizeof(cl_mem);
    break;
  }
  am.address_qualifier = a.aq;
  am.access_qualifier = a.acc;
  am.type_qualifier = a.tq;
  am.type_name_len = static_cast<uint32_t>(a.type_name.size());
  am.name_len = static_cast<uint32_t>(a.name.size());
  append(out, &am, sizeof am);
  append(out, a.type_name.data(), a.type_name.size());
  append(out, a.name.data(), a.name.size());
}

void kernel_meta(std::vector<uint8_t> &out, cl_kernel k, cl_device_id dev)
{
  auto kstr = [&](cl_kernel_info p) {
    return get_string([&](size_t n, void *v, size_t *r) {
      return clGetKernelInfo(k, p, n, v, r);
    });
  };
  std::string name = kstr(CL_KERNEL_FUNCTION_NAME);
  std::string attrs = kstr(CL_KERNEL_ATTRIBUTES);
  cl_uint num_args = 0;
  clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof num_args, &num_args, nullptr);
  pocl_remote_kernel_meta km{};
  km.name_len = static_cast<uint32_t>(name.size());
  km.attributes_len = static_cast<uint32_t>(attrs.size());
  km.num_args = num_args;
  size_t wg[3] = {0, 0, 0};
  clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof wg,
                           wg, nullptr);
  // No query exists for the hint; the attributes string carries it.
  unsigned long long hint[3] = {0, 0, 0};
  size_t at = attrs.find("work_group_size_hint");
  if (at != std::string::npos)
    sscanf(attrs.c_str() + at, "work_group_size_hint ( %llu , %llu , %llu",
           &hint[0], &hint[1], &hint[2]);
  for (int i = 0; i < 3; ++i) {
    km.reqd_wg_size[i] = wg[i];
    km.wg_size_hint[i] = hint[i];
  }
  cl_ulong local_mem = 0, private_mem = 0;
  size_t max_wg = 0, multiple = 0;
  clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local_mem,
                           &local_mem, nullptr);
  clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                           &max_wg, nullptr);
  clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                           sizeof multiple, &multiple, nullptr);
  clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PRIVATE_MEM_SIZE,
                           sizeof private_mem, &private_mem, nullptr);
  km.local_mem_size = local_mem;
  km.max_wg_size = max_wg;
  km.preferred_wg_multiple = multiple;
  km.private_mem_size = private_mem;
  append(out, &km, sizeof km);
  append(out, name.data(), name.size());
  append(out, attrs.data(), attrs.size());
  for (cl_uint i = 0; i < num_args; ++i)
    arg_meta(out, k, i);
}

// The binary of `dev` (CL_PROGRAM_BINARIES has one entry per program
// device) into `out`; CL_INVALID_DEVICE when the program has no such device.
cl_int program_binary(cl_program p, cl_device_id dev,
                      std::vector<uint8_t> &out)
{
  size_t ret = 0;
  cl_int err = clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, 0, nullptr, &ret);
  if (err != CL_SUCCESS)
    return err;
  std::vector<size_t> sizes(ret / sizeof(size_t));
  std::vector<cl_device_id> devs(sizes.size());
  err = clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, ret, sizes.data(),
                         nullptr);
  if (err == CL_SUCCESS)
    err = clGetProgramInfo(p, CL_PROGRAM_DEVICES,
                           devs.size() * sizeof(cl_device_id), devs.data(),
                           nullptr);
  if (err != CL_SUCCESS)
    return err;
  size_t idx = std::find(devs.begin(), devs.end(), dev) - devs.begin();
  if (idx == devs.size())
    return CL_INVALID_DEVICE;
  std::vector<std::vector<uint8_t>> bins(sizes.size());
  std::vector<unsigned char *> ptrs(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    bins[i].resize(sizes[i]);
    ptrs[i] = bins[i].data();
  }
  err = clGetProgramInfo(p, CL_PROGRAM_BINARIES,
                         ptrs.size() * sizeof(unsigned char *), ptrs.data(),
                         nullptr);
  if (err == CL_SUCCESS)
    out = std::move(bins[idx]);
  return err;
}

// The client's options as the native compiler should see them.  A PoCL
// client sends its processed options, where a few standard ones became
// clang flags: -cl-denorms-are-zero became -fdenormal-fp-math=positive-zero
// and -g became three -debug/-dwarf flags (dropped here: not every native
// compiler takes -g).  Everything else, quotes included, passes verbatim.
std::string native_options(const uint8_t *opts, size_t len, bool arg_info)
{
  const std::string in(reinterpret_cast<const char *>(opts), len);
  std::string out;
  size_t i = 0;
  while (i < in.size()) {
    if (in[i] == ' ') {
      out += in[i++];
      continue;
    }
    size_t end = i;
    char quote = 0;
    for (; end < in.size() && (quote || in[end] != ' '); ++end)
      if (in[end] == '"' || in[end] == '\'')
        quote = quote == in[end] ? 0 : (quote ? quote : in[end]);
    std::string tok = in.substr(i, end - i);
    if (tok == "-fdenormal-fp-math=positive-zero")
      out += "-cl-denorms-are-zero";
    else if (tok != "-debug-info-kind=limited" && tok != "-dwarf-version=4" &&
             tok != "-debugger-tuning=gdb" && tok != "-dwarf-column-info")
      out += tok;
    i = end;
  }
  if (arg_info)
    out += " -cl-kernel-arg-info";
  return out;
}

// A compiled object or library, built or made from its binary: what
// clLinkProgram takes.
bool linkable(cl_program p, cl_device_id dev)
{
  cl_build_status bs = CL_BUILD_ERROR;
  cl_program_binary_type bt = CL_PROGRAM_BINARY_TYPE_NONE;
  if (clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs,
                            nullptr) != CL_SUCCESS ||
      clGetProgramBuildInfo(p, dev, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt,
                            nullptr) != CL_SUCCESS)
    return false;
  return bs == CL_BUILD_SUCCESS ||
         (bs == CL_BUILD_NONE &&
          (bt == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT ||
           bt == CL_PROGRAM_BINARY_TYPE_LIBRARY));
}

// BUILD_PROGRAM kind BUILTIN: the names (';'-separated, as
// clCreateProgramWithBuiltInKernels takes them; empty ones are skipped, as
// PoCL does) into `names`, each one the device offers.  Anything else is
// CL_INVALID_VALUE with a log line, before the runtime sees it.
cl_int builtin_names(const char *sid, const uint8_t *body, uint64_t len,
                     cl_device_id dev, std::vector<std::string> &names)
{
  if (len == 0 || len > POCL_REMOTE_MAX_STRING) {
    LOG_WARN(sid, "built-in kernel names of %llu bytes refused",
             (unsigned long long)len);
    return CL_INVALID_VALUE;
  }
  const char *text = reinterpret_cast<const char *>(body);
  if (std::memchr(text, '\0', len) != nullptr) {
    LOG_WARN(sid, "built-in kernel names with a NUL byte refused");
    return CL_INVALID_VALUE;
  }
  std::string offered;
  size_t size = 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_BUILT_IN_KERNELS, 0, nullptr, &size) ==
          CL_SUCCESS &&
      size > 0 && size <= POCL_REMOTE_MAX_STRING) {
    offered.resize(size);
    if (clGetDeviceInfo(dev, CL_DEVICE_BUILT_IN_KERNELS, size, &offered[0],
                        nullptr) != CL_SUCCESS)
      offered.clear();
    offered.resize(std::min(offered.find('\0'), offered.size()));
  }
  const std::string all = ';' + offered + ';';
  const std::string in(text, len);
  for (size_t i = 0; i <= in.size();) {
    size_t end = std::min(in.find(';', i), in.size());
    std::string name = in.substr(i, end - i);
    i = end + 1;
    if (name.empty())
      continue;
    if (all.find(';' + name + ';') == std::string::npos) {
      LOG_WARN(sid, "built-in kernel '%.64s' is not one of the device's",
               name.c_str());
      return CL_INVALID_VALUE;
    }
    if (names.size() == POCL_REMOTE_MAX_KERNELS) {
      LOG_WARN(sid, "over %u built-in kernel names refused",
               POCL_REMOTE_MAX_KERNELS);
      return CL_INVALID_VALUE;
    }
    names.push_back(std::move(name));
  }
  if (names.empty()) {
    LOG_WARN(sid, "built-in kernel names without a name refused");
    return CL_INVALID_VALUE;
  }
  return CL_SUCCESS;
}

// SPIR-V's magic number in this host's byte order.
bool spirv_magic(const uint8_t *b, uint64_t n)
{
  static const uint8_t magic[4] = {0x03, 0x02, 0x23, 0x07};
  return n >= 4 && std::memcmp(b, magic, 4) == 0;
}

// A SPIR-V module as clCreateProgramWithIL takes it: the magic number,
// whole words, the five-word header.
bool is_spirv(const uint8_t *b, uint64_t n)
{
  return spirv_magic(b, n) && n >= 20 && n % 4 == 0;
}

// Creates and builds/compiles/links the program natively.  Returns the
// program (possibly with a failed build, for its log) or nullptr; err: the
// build's return code.
cl_program make_program(
    cl_context ctx, cl_device_id dev, uint32_t kind, const std::string &options,
    const uint8_t *body, size_t body_len, const std::vector<std::string> &names,
    const std::vector<std::pair<const char *, size_t>> &hdrs,
    const std::vector<cl_program> &inputs,
    const std::vector<pocl_remote_spec_const> &spec_consts, cl_int &err)
{
  cl_program prog = nullptr;
  const char *text = reinterpret_cast<const char *>(body);
  switch (kind) {
  case POCL_REMOTE_BUILD_IL:
  case POCL_REMOTE_BUILD_IL_COMPILE:
    prog = clCreateProgramWithIL(ctx, body, body_len, &err);
    for (size_t i = 0;
         prog != nullptr && err == CL_SUCCESS && i < spec_consts.size(); ++i)
      err = clSetProgramSpecializationConstant(
          prog, spec_consts[i].id, spec_consts[i].size, &spec_consts[i].value);
    if (prog != nullptr && err == CL_SUCCESS)
      err =
          kind == POCL_REMOTE_BUILD_IL
              ? clBuildProgram(prog, 1, &dev, options.c_str(), nullptr, nullptr)
              : clCompileProgram(prog, 1, &dev, options.c_str(), 0, nullptr,
                                 nullptr, nullptr, nullptr);
    return prog;
  case POCL_REMOTE_BUILD_BINARY:
  case POCL_REMOTE_BUILD_LOAD: {
    // A module given as a binary builds as PoCL builds it (the client is a
    // PoCL device): as IL, which runtimes take where their binary call may
    // not (Intel's refuses SPIR-V).
    if (kind == POCL_REMOTE_BUILD_BINARY && is_spirv(body, body_len)) {
      prog = clCreateProgramWithIL(ctx, body, body_len, &err);
      if (prog != nullptr)
        err = clBuildProgram(prog, 1, &dev, options.c_str(), nullptr, nullptr);
      return prog;
    }
    cl_int bin_status = CL_SUCCESS;
    prog = clCreateProgramWithBinary(ctx, 1, &dev, &body_len, &body,
                                     &bin_status, &err);
    if (prog != nullptr && kind == POCL_REMOTE_BUILD_BINARY)
      err = clBuildProgram(prog, 1, &dev, options.c_str(), nullptr, nullptr);
    return prog;
  }
  case POCL_REMOTE_BUILD_BUILTIN: {
    // Checked by builtin_names; NUL-terminated here.
    const std::string list(text, body_len);
    prog = clCreateProgramWithBuiltInKernels(ctx, 1, &dev, list.c_str(), &err);
    if (prog != nullptr)
      err = clBuildProgram(prog, 1, &dev, options.c_str(), nullptr, nullptr);
    return prog;
  }
  case POCL_REMOTE_BUILD_LINK:
    return clLinkProgram(ctx, 1, &dev, options.c_str(),
                         static_cast<cl_uint>(inputs.size()), inputs.data(),
                         nullptr, nullptr, &err);
  case POCL_REMOTE_BUILD_SOURCE:
    prog = clCreateProgramWithSource(ctx, 1, &text, &body_len, &err);
    if (prog != nullptr)
      err = clBuildProgram(prog, 1, &dev, options.c_str(), nullptr, nullptr);
    return prog;
  default: // POCL_REMOTE_BUILD_COMPILE
    break;
  }
  prog = clCreateProgramWithSource(ctx, 1, &text, &body_len, &err);
  if (prog == nullptr)
    return nullptr;
  std::vector<cl_program> hp;
  std::vector<const char *> hn;
  for (size_t i = 0; i < hdrs.size() && err == CL_SUCCESS; ++i) {
    const char *htext = hdrs[i].first;
    size_t hlen = hdrs[i].second;
    cl_program h = clCreateProgramWithSource(ctx, 1, &htext, &hlen, &err);
    if (h != nullptr) {
      hp.push_back(h);
      hn.push_back(names[i].c_str());
    }
  }
  if (err == CL_SUCCESS)
    err = clCompileProgram(prog, 1, &dev, options.c_str(),
                           static_cast<cl_uint>(hp.size()), hp.data(),
                           hn.data(), nullptr, nullptr);
  for (cl_program h : hp)
    clReleaseProgram(h);
  return prog;
}

} // namespace

bool Session::build_program(const Decoded &msg)
{
  const pocl_remote_build_program &c = msg.build;
  const uint8_t *opts = msg.options, *src = msg.data;
  uint64_t body_len = c.body_len;
  std::vector<std::string> header_names;
  for (auto &n : msg.header_names)
    header_names.emplace_back(n.first, n.second);
  const std::vector<std::pair<const char *, size_t>> &header_srcs =
      msg.header_srcs;
  const std::vector<uint64_t> &inputs = msg.link_inputs;

  cl_int err = CL_SUCCESS;
  if (c.device >= devs_.devices.size())
    err = CL_INVALID_DEVICE;
  else if (c.kind != POCL_REMOTE_BUILD_LINK &&
           c.kind != POCL_REMOTE_BUILD_BUILTIN && c.body_len == 0)
    err = CL_INVALID_VALUE;
  for (auto &h : header_srcs)
    if (h.second == 0)
      err = CL_INVALID_VALUE;
  cl_program prog = nullptr;
  const Device *d = err == CL_SUCCESS ? &devs_.devices[c.device] : nullptr;
  std::vector<std::string> builtins;
  if (d != nullptr && c.kind == POCL_REMOTE_BUILD_BUILTIN) {
    err = builtin_names(sid_, src, c.body_len, d->id, builtins);
    if (err != CL_SUCCESS)
      d = nullptr;
  }
  // SPIR-V only for a device that takes it, and only a module: the vendor
  // library never sees IL its device does not advertise.
  const bool il_kind =
      c.kind == POCL_REMOTE_BUILD_IL || c.kind == POCL_REMOTE_BUILD_IL_COMPILE;
  if (d != nullptr && il_kind && !d->il) {
    LOG_WARN(sid_, "program %llu: IL for a device without SPIR-V refused",
             (unsigned long long)c.prog_id);
    err = CL_INVALID_OPERATION;
    d = nullptr;
  } else if (d != nullptr && il_kind && !is_spirv(src, c.body_len)) {
    LOG_WARN(sid_, "program %llu: IL of %llu bytes is not SPIR-V",
             (unsigned long long)c.prog_id, (unsigned long long)c.body_len);
    err = CL_INVALID_VALUE;
    d = nullptr;
  }
  // Binaries: this server's own (or SPIR), else the vendor library is not
  // asked at all (NVIDIA's aborts the process on a foreign one).
  if (d != nullptr && (c.kind == POCL_REMOTE_BUILD_BINARY ||
                       c.kind == POCL_REMOTE_BUILD_LOAD)) {
    DecodeError why;
    uint64_t native_len = 0;
    if (!check_binary(src, c.body_len, d->binary_key, &src, &native_len,
                      why)) {
      LOG_WARN(sid_, "program %llu refused: %s",
               (unsigned long long)c.prog_id, why.why);
      err = CL_INVALID_BINARY;
    } else if (src == msg.data && spirv_magic(src, c.body_len) &&
               (!d->il || !is_spirv(src, c.body_len))) {
      LOG_WARN(sid_, "program %llu: SPIR-V binary refused: %s",
               (unsigned long long)c.prog_id,
               d->il ? "no whole module" : "the device takes no SPIR-V");
      err = CL_INVALID_BINARY;
    }
    body_len = native_len;
  }
  std::vector<cl_program> in;
  for (uint64_t pid : inputs) {
    auto it = programs_.find(pid);
    if (it == programs_.end())
      err = CL_INVALID_PROGRAM;
    else if (d != nullptr && !linkable(it->second.p, d->id))
      // Nothing to link; PoCL 3.1 would leak the failed input and abort
      // when the session's context is released.
      err = CL_LINK_PROGRAM_FAILURE;
    else
      in.push_back(it->second.p);
  }
  // Files the source includes from the client's directories, on disk
  // until the build is done.
  IncludeDir includes(
      std::string(reinterpret_cast<const char *>(opts), c.options_len),
      msg.file_names, msg.file_data);
  if (!includes.ok()) {
    LOG_WARN(sid_, "program %llu: cannot write its %zu included files",
             (unsigned long long)c.prog_id, msg.file_names.size());
    err = CL_OUT_OF_RESOURCES;
  }
  // A source built before in this session: its program again (see
  // built_programs.hh).
  const bool shareable = err == CL_SUCCESS &&
                         c.kind == POCL_REMOTE_BUILD_SOURCE &&
                         msg.file_names.empty() &&
                         BuiltPrograms::shareable_source(src, body_len);
  std::string built_key;
  if (shareable) {
    built_key =
        BuiltPrograms::key(c.device, opts, c.options_len, src, body_len);
    if (const BuiltPrograms::Entry *e = built_.find(built_key)) {
      clRetainProgram(e->program);
      keep_program(c.prog_id, e->program);
      LOG_DEBUG(sid_, "program %llu: built before",
                (unsigned long long)c.prog_id);
      reply(msg.hdr.id, CL_SUCCESS, e->reply.data(), e->reply.size());
      return true;
    }
  }
  cl_context ctx = err == CL_SUCCESS ? context(d->platform, err) : nullptr;
  if (ctx != nullptr) {
    // Argument metadata for the client (from OpenCL 1.2 on).
    // Built-in kernels too: PoCL answers argument info only for programs
    // built without options or with this one.
    bool arg_info = (c.kind == POCL_REMOTE_BUILD_SOURCE ||
                     c.kind == POCL_REMOTE_BUILD_COMPILE ||
                     c.kind == POCL_REMOTE_BUILD_BUILTIN) &&
                    (d->cl_major > 1 || d->cl_minor >= 2);
    std::string options =
        includes.options() + native_options(opts, c.options_len, arg_info);
    prog = make_program(ctx, d->id, c.kind, options, src, body_len,
                        header_names, header_srcs, in, msg.spec_consts, err);
    // NVIDIA's compiler fails on a kernel without arguments when asked for
    // argument info (ptxas: "Parsing error near '}'"); this is why upstream
    // PoCL-R cannot build `__kernel void noop(){}` there.  Build again
    // without it: argument kinds then come from trial clSetKernelArg calls.
    if (arg_info && err != CL_SUCCESS) {
      if (prog != nullptr)
        clReleaseProgram(prog);
      options =
          includes.options() + native_options(opts, c.options_len, false);
      prog = make_program(ctx, d->id, c.kind, options, src, body_len,
                          header_names, header_srcs, in, msg.spec_consts, err);
      if (err == CL_SUCCESS)
        LOG_INFO(sid_, "program builds only without -cl-kernel-arg-info");
    }
  }

  pocl_remote_build_reply br{};
  br.build_status = CL_BUILD_ERROR;
  std::string log;
  std::vector<uint8_t> kernels;
  if (prog != nullptr) {
    cl_build_status bs = CL_BUILD_ERROR;
    clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs,
                          nullptr);
    br.build_status = bs;
    log = get_string([&](size_t n, void *v, size_t *r) {
      return clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, n, v, r);
    });
    // Compiled objects and libraries have no kernels; only executables are
    // described (Intel's OpenCL CPU runtime crashes in
    // clCreateKernelsInProgram on a library).
    cl_program_binary_type bt = CL_PROGRAM_BINARY_TYPE_NONE;
    clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt,
                          nullptr);
    cl_uint nk = 0;
    if (err == CL_SUCCESS && c.kind == POCL_REMOTE_BUILD_BUILTIN) {
      // In the order of the names, as a local PoCL lists them.
      for (const std::string &name : builtins) {
        cl_kernel k = clCreateKernel(prog, name.c_str(), &err);
        if (k == nullptr)
          break;
        kernel_meta(kernels, k, d->id);
        clReleaseKernel(k);
        ++nk;
      }
      if (err != CL_SUCCESS) {
        LOG_WARN(sid_, "built-in kernel %u of program %llu: no kernel (%d)",
                 nk, (unsigned long long)c.prog_id, err);
        kernels.clear();
        nk = 0;
      }
    } else if (err == CL_SUCCESS && c.kind != POCL_REMOTE_BUILD_COMPILE &&
        c.kind != POCL_REMOTE_BUILD_LOAD &&
        bt == CL_PROGRAM_BINARY_TYPE_EXECUTABLE &&
        clCreateKernelsInProgram(prog, 0, nullptr, &nk) == CL_SUCCESS &&
        nk > 0 && nk <= POCL_REMOTE_MAX_KERNELS) {
      std::vector<cl_kernel> ks(nk);
      if (clCreateKernelsInProgram(prog, nk, ks.data(), nullptr) != CL_SUCCESS)
        nk = 0;
      for (cl_uint i = 0; i < nk; ++i) {
        kernel_meta(kernels, ks[i], d->id);
        clReleaseKernel(ks[i]);
      }
    } else
      nk = 0;
    br.num_kernels = nk;
    // Kept even when the build failed: the client frees it like any other.
    keep_program(c.prog_id, prog);
  }
  // Keep the reply within what the client accepts: the log is cut.
  uint64_t fixed = sizeof br + kernels.size();
  if (fixed + log.size() > POCL_REMOTE_MAX_PAYLOAD)
    log.resize(fixed < POCL_REMOTE_MAX_PAYLOAD ? POCL_REMOTE_MAX_PAYLOAD - fixed
                                               : 0);
  br.log_len = log.size();
  std::vector<uint8_t> out;
  out.reserve(sizeof br + log.size() + kernels.size());
  append(out, &br, sizeof br);
  append(out, log.data(), log.size());
  append(out, kernels.data(), kernels.size());
  LOG_DEBUG(sid_, "program %llu kind %u: %d, %u kernels",
            (unsigned long long)c.prog_id, c.kind, err, br.num_kernels);
  if (shareable && err == CL_SUCCESS && br.build_status == CL_BUILD_SUCCESS)
    built_.keep(std::move(built_key), prog, d->id, d->cl_major >= 2, out);
  reply(msg.hdr.id, err, out.data(), out.size());
  return true;
}

// A rebuild under the same id replaces the old program (its kernels hold
// their own references).
void Session::keep_program(uint64_t id, cl_program prog)
{
  auto ins = programs_.try_emplace(id, Program{prog});
  if (!ins.second) {
    clReleaseProgram(ins.first->second.p);
    ins.first->second.p = prog;
  }
}

// Asked for only when the client needs the binary (clGetProgramInfo): on a
// PoCL server, CL_PROGRAM_BINARIES compiles every kernel of the program
// once more.
bool Session::get_program_binary(const Msg &m)
{
  auto c = load<pocl_remote_get_program_binary>(m.body);
  auto it = programs_.find(c.prog_id);
  cl_int err = CL_SUCCESS;
  std::vector<uint8_t> binary;
  if (c.device >= devs_.devices.size())
    err = CL_INVALID_DEVICE;
  else if (it == programs_.end())
    err = CL_INVALID_PROGRAM;
  else
    err = program_binary(it->second.p, devs_.devices[c.device].id, binary);
  if (err == CL_SUCCESS && !binary.empty()) {
    pocl_remote_binary_header h{};
    std::memcpy(h.magic, POCL_REMOTE_BINARY_MAGIC, sizeof h.magic);
    h.device_key = devs_.devices[c.device].binary_key;
    h.checksum = fnv1a(binary.data(), binary.size());
    h.size = binary.size();
    binary.insert(binary.begin(), reinterpret_cast<const uint8_t *>(&h),
                  reinterpret_cast<const uint8_t *>(&h) + sizeof h);
  }
  if (err == CL_SUCCESS && binary.size() > POCL_REMOTE_MAX_PAYLOAD) {
    LOG_WARN(sid_, "binary of %zu bytes is over the reply limit",
             binary.size());
    binary.clear();
    err = CL_OUT_OF_RESOURCES;
  }
  LOG_DEBUG(sid_, "program %llu: %d, %zu-byte binary",
            (unsigned long long)c.prog_id, err, binary.size());
  reply(m.hdr.id, err, binary.data(), binary.size());
  return true;
}

bool Session::create_kernel(const Decoded &d)
{
  auto c = load<pocl_remote_create_kernel>(d.body);
  auto pit = programs_.find(c.prog_id);
  cl_int err = CL_SUCCESS;
  if (c.device >= devs_.devices.size())
    err = CL_INVALID_DEVICE;
  else if (kernels_.count(c.kernel_id))
    err = CL_INVALID_VALUE;
  else if (pit == programs_.end())
    err = CL_INVALID_PROGRAM;
  if (err == CL_SUCCESS) {
    std::string name(reinterpret_cast<const char *>(d.data), d.data_len);
    cl_kernel k = clCreateKernel(pit->second.p, name.c_str(), &err);
    if (k != nullptr) {
      cl_uint n = 0;
      clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof n, &n, nullptr);
      std::vector<ArgCache> args(n);
      for (cl_uint i = 0; i < n; ++i)
        args[i].scalar = classify_arg(k, i).type == kArgNone;
      kernels_.emplace(c.kernel_id, Kernel{k, std::move(args)});
    }
  }
  reply(d.hdr.id, err);
  return true;
}

// The runtime's own answer: the client's PoCL knows nothing of what the
// server's compiler decided (sub-group sizes, spills).
bool Session::kernel_info(const Msg &m)
{
  auto c = load<pocl_remote_kernel_info>(m.body);
  auto kit = kernels_.find(c.kernel_id);
  cl_int err = CL_SUCCESS;
  if (c.device >= devs_.devices.size())
    err = CL_INVALID_DEVICE;
  else if (kit == kernels_.end())
    err = CL_INVALID_KERNEL;
  else if (c.kind > POCL_REMOTE_KINFO_SUB_GROUP ||
           c.input_size != m.hdr.payload_size)
    err = CL_INVALID_VALUE;
  std::vector<uint8_t> value;
  size_t size = 0;
  if (c.value_size > POCL_REMOTE_MAX_KINFO_VALUE)
    err = CL_INVALID_VALUE;
  auto query = [&](size_t n, void *v, size_t *ret) {
    cl_device_id dev = devs_.devices[c.device].id;
    if (c.kind == POCL_REMOTE_KINFO_WORK_GROUP)
      return clGetKernelWorkGroupInfo(kit->second.k, dev, c.param, n, v, ret);
    return clGetKernelSubGroupInfo(kit->second.k, dev, c.param, c.input_size,
                                   c.input_size ? m.payload : nullptr, n, v,
                                   ret);
  };
  if (err == CL_SUCCESS && c.value_size != 0) {
    // in the caller's room, which some queries read (the dimensions of
    // CL_KERNEL_LOCAL_SIZE_FOR_SUB_GROUP_COUNT)
    value.resize(c.value_size);
    err = query(c.value_size, value.data(), &size);
    value.resize(err == CL_SUCCESS && size < c.value_size ? size : c.value_size);
  } else if (err == CL_SUCCESS) {
    err = query(0, nullptr, &size);
    if (err == CL_SUCCESS && size > POCL_REMOTE_MAX_KINFO_VALUE)
      err = CL_OUT_OF_RESOURCES;
    if (err == CL_SUCCESS) {
      value.resize(size);
      err = query(size, value.data(), nullptr);
    }
  }
  reply(m.hdr.id, err, err == CL_SUCCESS ? value.data() : nullptr,
        err == CL_SUCCESS ? value.size() : 0);
  return true;
}

} // namespace pocld
