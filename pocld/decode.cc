// decode.cc - the checks and the decoding of what a client sends.
#include "decode.hh"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace pocld {

namespace {

bool volume(const uint64_t r[3], uint64_t &out)
{
  return mul_ok(r[0], r[1], out) && mul_ok(out, r[2], out);
}

// An NDRANGE's fine-grained SVM regions: a count entry, the regions, then
// their bytes, exactly.  Whether the addresses are the session's is the
// handler's business.
bool decode_svm_sync(Decoded &d, Cursor &cur, DecodeError &e)
{
  pocl_remote_svm_sync head;
  if (!cur.get(head) || head.address > POCL_REMOTE_MAX_ARGS ||
      (d.svm_regions = cur.take(head.address * sizeof head)) == nullptr)
    return e.fail("NDRANGE: malformed SVM region table");
  d.svm_count = head.address;
  uint64_t total = 0;
  for (uint64_t i = 0; i < d.svm_count; ++i) {
    pocl_remote_svm_sync r;
    memcpy(&r, d.svm_regions + i * sizeof r, sizeof r);
    if (r.size == 0 || r.size > cur.left() - total)
      return e.fail("NDRANGE: SVM region %llu of %llu bytes",
                    (unsigned long long)i, (unsigned long long)r.size);
    total += r.size;
  }
  if (total != head.size || (d.data = cur.take(total)) == nullptr)
    return e.fail("NDRANGE: SVM regions of %llu bytes, %llu announced",
                  (unsigned long long)total, (unsigned long long)head.size);
  d.data_len = total;
  return true;
}

bool decode_args(Decoded &d, Cursor &cur, DecodeError &e)
{
  const pocl_remote_ndrange &c = d.ndrange;
  const bool svm = c.cmd.flags & POCL_RCMD_SVM;
  if (c.num_args > POCL_REMOTE_MAX_ARGS || c.args_size > cur.left() ||
      (!svm && c.args_size != cur.left()))
    return e.fail("NDRANGE: %u args in %llu bytes, %llu bytes left",
                  c.num_args, (unsigned long long)c.args_size,
                  (unsigned long long)cur.left());
  for (uint32_t i = 0; i < c.num_args; ++i) {
    pocl_remote_arg a;
    if (!cur.get(a))
      return e.fail("kernel argument %u truncated", i);
    const uint8_t *value = nullptr;
    switch (a.kind) {
    case POCL_REMOTE_ARG_SCALAR:
      // a <= left first: the padding cannot overflow then.
      if (a.a == 0 || a.a > cur.left() ||
          (value = cur.take((a.a + 7) & ~uint64_t{7})) == nullptr)
        return e.fail("kernel argument %u: bad scalar size %llu", i,
                      (unsigned long long)a.a);
      break;
    case POCL_REMOTE_ARG_BUFFER:
    case POCL_REMOTE_ARG_NULL:
    case POCL_REMOTE_ARG_LOCAL:
    case POCL_REMOTE_ARG_IMAGE:
    case POCL_REMOTE_ARG_SAMPLER:
    case POCL_REMOTE_ARG_SVM:
      break;
    default:
      return e.fail("kernel argument %u: unknown kind %u", i, a.kind);
    }
    d.args.push_back(ArgView{a.kind, a.a, a.b, value});
  }
  if (svm && !decode_svm_sync(d, cur, e))
    return false;
  if (cur.left() != 0)
    return e.fail("NDRANGE: %llu bytes after the last argument",
                  (unsigned long long)cur.left());
  return true;
}

bool decode_mem(Decoded &d, Cursor &cur, DecodeError &e)
{
  const uint32_t type = d.hdr.type;
  const pocl_remote_mem_cmd &c = d.mem;
  const bool is_write = type == POCL_RMSG_WRITE ||
                        type == POCL_RMSG_WRITE_RECT ||
                        type == POCL_RMSG_WRITE_IMAGE;
  const bool on_data =
      is_write && (c.cmd.flags & POCL_RCMD_DATA_ON_DATA_SOCKET);
  // What follows the wait list.  Host data sizes the body alone determines
  // are checked here; images need the pixel size (the handler's business).
  uint64_t extra = 0;
  if (is_write && !on_data)
    extra = c.data_size;
  else if (type == POCL_RMSG_FILL) {
    if (c.data_size == 0 || c.data_size > POCL_REMOTE_MAX_FILL_PATTERN)
      return e.fail("FILL pattern of %llu bytes",
                    (unsigned long long)c.data_size);
    extra = c.data_size;
  } else if (type == POCL_RMSG_FILL_IMAGE)
    extra = 16;
  d.data = cur.take(extra);
  d.data_len = extra;
  if (d.data == nullptr || cur.left() != 0)
    return e.fail("message type %u: payload of %llu bytes does not match",
                  type, (unsigned long long)d.hdr.payload_size);
  uint64_t expect = c.data_size;
  bool sized = true;
  if (c.cmd.flags & POCL_RCMD_SVM_HOST)
    expect = 0; // the bytes stay on the server
  else if (type == POCL_RMSG_READ || type == POCL_RMSG_WRITE)
    expect = c.region[0];
  else if (type == POCL_RMSG_READ_RECT || type == POCL_RMSG_WRITE_RECT)
    sized = volume(c.region, expect);
  if (!sized || expect != c.data_size)
    return e.fail("message type %u: data size %llu does not match the region",
                  type, (unsigned long long)c.data_size);
  return true;
}

bool decode_command(Decoded &d, const uint8_t *payload, DecodeError &e)
{
  d.cmd = load<pocl_remote_cmd>(d.body);
  Cursor cur(payload, d.hdr.payload_size);
  const uint32_t n = d.cmd.num_waits;
  const uint8_t *raw = nullptr;
  if (n > POCL_REMOTE_MAX_WAITS ||
      (raw = cur.take(uint64_t{n} * sizeof(pocl_remote_wait))) == nullptr)
    return e.fail("%u wait entries in a %llu-byte payload", n,
                  (unsigned long long)d.hdr.payload_size);
  d.waits.raw = raw;
  d.waits.count = n;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t origin = d.waits[i].origin;
    if (origin != POCL_REMOTE_WAIT_SAME_SERVER &&
        origin != POCL_REMOTE_WAIT_FOREIGN && origin != POCL_REMOTE_WAIT_PEER)
      return e.fail("wait entry with unknown origin %u", origin);
  }
  switch (d.hdr.type) {
  case POCL_RMSG_NDRANGE:
    d.ndrange = load<pocl_remote_ndrange>(d.body);
    return decode_args(d, cur, e);
  case POCL_RMSG_MARKER:
    if (cur.left() != 0)
      return e.fail("MARKER with a payload beyond its wait list");
    return true;
  case POCL_RMSG_CMDBUF_RUN:
    d.cmdbuf_run = load<pocl_remote_cmdbuf_run>(d.body);
    if (cur.left() != 0)
      return e.fail("CMDBUF_RUN with a payload beyond its wait list");
    return true;
  case POCL_RMSG_PUSH:
  case POCL_RMSG_MIGRATE_IN: {
    const pocl_remote_migrate &c = d.migrate = load<pocl_remote_migrate>(d.body);
    if (cur.left() != 0 || c.peer >= POCL_REMOTE_MAX_PEERS || c.size == 0 ||
        (c.src_size_id == 0) != (c.dst_size_id == 0))
      return e.fail("message type %u: malformed migration (peer %u, size "
                    "%llu)",
                    d.hdr.type, c.peer, (unsigned long long)c.size);
    return true;
  }
  default:
    d.mem = load<pocl_remote_mem_cmd>(d.body);
    return decode_mem(d, cur, e);
  }
}

bool decode_build(Decoded &d, const uint8_t *payload, DecodeError &e)
{
  const pocl_remote_build_program &c = d.build =
      load<pocl_remote_build_program>(d.body);
  Cursor cur(payload, d.hdr.payload_size);
  d.options = cur.take(c.options_len);
  d.data = cur.take(c.body_len);
  d.data_len = c.body_len;
  if (d.options == nullptr || d.data == nullptr ||
      c.options_len > POCL_REMOTE_MAX_STRING)
    return e.fail("BUILD_PROGRAM: options %u + body %llu exceed the payload",
                  c.options_len, (unsigned long long)c.body_len);
  // COMPILE: embedded headers; LINK: input program ids.  Counts are checked
  // against the bytes left before anything is reserved for them.
  bool ok = true;
  if (c.kind == POCL_REMOTE_BUILD_COMPILE) {
    ok = c.count <= cur.left() / 8;
    for (uint32_t i = 0; ok && i < c.count; ++i) {
      uint32_t name_len = 0, src_len = 0;
      const uint8_t *name = nullptr, *src = nullptr;
      ok = cur.get(name_len) && cur.get(src_len) &&
           name_len <= POCL_REMOTE_MAX_STRING &&
           (name = cur.take(name_len)) != nullptr &&
           (src = cur.take(src_len)) != nullptr;
      if (ok) {
        d.header_names.emplace_back(reinterpret_cast<const char *>(name),
                                    name_len);
        d.header_srcs.emplace_back(reinterpret_cast<const char *>(src),
                                   src_len);
      }
    }
  } else if (c.kind == POCL_REMOTE_BUILD_LINK) {
    ok = c.body_len == 0 && c.count <= cur.left() / 8;
    for (uint32_t i = 0; ok && i < c.count; ++i) {
      uint64_t id = 0;
      ok = cur.get(id);
      d.link_inputs.push_back(id);
    }
  } else if (c.kind == POCL_REMOTE_BUILD_IL ||
             c.kind == POCL_REMOTE_BUILD_IL_COMPILE) {
    ok = c.count <= POCL_REMOTE_MAX_SPEC_CONSTS &&
         c.count <= cur.left() / sizeof(pocl_remote_spec_const);
    for (uint32_t i = 0; ok && i < c.count; ++i) {
      pocl_remote_spec_const sc{};
      ok = cur.get(sc) &&
           (sc.size == 1 || sc.size == 2 || sc.size == 4 || sc.size == 8);
      d.spec_consts.push_back(sc);
    }
  } else
    ok = c.kind == POCL_REMOTE_BUILD_SOURCE ||
         c.kind == POCL_REMOTE_BUILD_BINARY ||
         c.kind == POCL_REMOTE_BUILD_LOAD ||
         c.kind == POCL_REMOTE_BUILD_BUILTIN;
  if (ok && c.num_files > 0)
    ok = (c.kind == POCL_REMOTE_BUILD_SOURCE ||
          c.kind == POCL_REMOTE_BUILD_COMPILE) &&
         c.num_files <= POCL_REMOTE_MAX_FILES &&
         c.num_files <= cur.left() / 8;
  for (uint32_t i = 0; ok && i < c.num_files; ++i) {
    uint32_t name_len = 0, size = 0;
    const uint8_t *name = nullptr, *data = nullptr;
    ok = cur.get(name_len) && cur.get(size) && name_len <= 4096 &&
         (name = cur.take(name_len)) != nullptr &&
         (data = cur.take(size)) != nullptr &&
         include_path_ok(reinterpret_cast<const char *>(name), name_len);
    if (ok) {
      d.file_names.emplace_back(reinterpret_cast<const char *>(name),
                                name_len);
      d.file_data.emplace_back(reinterpret_cast<const char *>(data), size);
    }
  }
  if (!ok || cur.left() != 0)
    return e.fail("BUILD_PROGRAM: malformed payload (kind %u, count %u)",
                  c.kind, c.count);
  return true;
}

} // namespace

bool decode_cmdbuf(const uint8_t *payload, uint64_t size,
                   uint32_t num_commands, std::vector<CmdBufEntry> &out,
                   DecodeError &e)
{
  out.clear();
  if (num_commands == 0 || num_commands > POCL_REMOTE_MAX_CMDBUF_COMMANDS)
    return e.fail("CMDBUF_CREATE: %u commands", num_commands);
  Cursor cur(payload, size);
  out.reserve(num_commands);
  for (uint32_t i = 0; i < num_commands; ++i) {
    pocl_remote_cmdbuf_entry en;
    if (!cur.get(en))
      return e.fail("CMDBUF_CREATE: command %u truncated", i);
    const uint32_t t = en.type;
    if (t != POCL_RMSG_NDRANGE && t != POCL_RMSG_COPY &&
        t != POCL_RMSG_COPY_RECT && t != POCL_RMSG_FILL &&
        t != POCL_RMSG_MARKER)
      return e.fail("CMDBUF_CREATE: command %u of type %u", i, t);
    if (en.num_syncs > i)
      return e.fail("CMDBUF_CREATE: command %u waits for %u sync points",
                    i, en.num_syncs);
    const uint8_t *raw = cur.take((uint64_t{en.num_syncs} * 4 + 7) & ~7ull);
    const int64_t body_size = pocl_remote_body_size(t);
    const uint8_t *bytes = nullptr;
    if (raw == nullptr || en.size < uint64_t(body_size) ||
        (bytes = cur.take(en.size)) == nullptr)
      return e.fail("CMDBUF_CREATE: command %u of %llu bytes", i,
                    (unsigned long long)en.size);
    CmdBufEntry &ce = out.emplace_back();
    for (uint32_t j = 0; j < en.num_syncs; ++j) {
      uint32_t s = load<uint32_t>(raw + 4 * j);
      if (s >= i)
        return e.fail("CMDBUF_CREATE: command %u waits for command %u", i, s);
      ce.syncs.push_back(s);
    }
    pocl_remote_hdr h{};
    h.type = t;
    h.body_size = uint32_t(body_size);
    h.payload_size = en.size - uint64_t(body_size);
    if (load<pocl_remote_cmd>(bytes).num_waits != 0)
      return e.fail("CMDBUF_CREATE: command %u with a wait list", i);
    if (!decode(h, bytes, bytes + body_size, ce.d, e))
      return false;
    if (ce.d.cmd.flags & (POCL_RCMD_SVM | POCL_RCMD_SVM_HOST |
                          POCL_RCMD_CONTENT_SIZE | POCL_RCMD_SILENT))
      return e.fail("CMDBUF_CREATE: command %u with flags %#x", i,
                    ce.d.cmd.flags);
  }
  if (cur.left() != 0)
    return e.fail("CMDBUF_CREATE: %llu bytes after the last command",
                  (unsigned long long)cur.left());
  return true;
}

bool include_path_ok(const char *p, size_t n)
{
  // "k/..." with k decimal, then components that are neither empty nor "."
  // nor "..", and no NUL: the file stays inside pocld's directory.
  size_t i = 0;
  while (i < n && i < 4 && p[i] >= '0' && p[i] <= '9')
    ++i;
  if (i == 0 || i >= n || p[i] != '/')
    return false;
  size_t start = ++i;
  for (; i <= n; ++i) {
    if (i < n && p[i] == 0)
      return false;
    if (i == n || p[i] == '/') {
      size_t len = i - start;
      if (len == 0 || (len == 1 && p[start] == '.') ||
          (len == 2 && p[start] == '.' && p[start + 1] == '.'))
        return false;
      start = i + 1;
    }
  }
  return true;
}

uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
  const uint8_t *b = static_cast<const uint8_t *>(p);
  for (size_t i = 0; i < n; ++i)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

bool check_binary(const uint8_t *b, uint64_t n, uint64_t device_key,
                  const uint8_t **native, uint64_t *native_len,
                  DecodeError &e)
{
  static const uint8_t spirv[4] = {0x03, 0x02, 0x23, 0x07};
  static const uint8_t bitcode[4] = {'B', 'C', 0xC0, 0xDE};
  static const uint8_t bc_wrapper[4] = {0xDE, 0xC0, 0x17, 0x0B};
  *native = b;
  *native_len = n;
  if (n >= 4 && (std::memcmp(b, spirv, 4) == 0 ||
                 std::memcmp(b, bitcode, 4) == 0 ||
                 std::memcmp(b, bc_wrapper, 4) == 0))
    return true;
  pocl_remote_binary_header h;
  if (n < sizeof h)
    return e.fail("binary of %llu bytes is none of this server's",
                  (unsigned long long)n);
  std::memcpy(&h, b, sizeof h);
  if (std::memcmp(h.magic, POCL_REMOTE_BINARY_MAGIC, sizeof h.magic) != 0)
    return e.fail("binary is none of this server's (no header)");
  if (h.device_key != device_key)
    return e.fail("binary was made for another platform or device");
  if (h.size != n - sizeof h || fnv1a(b + sizeof h, h.size) != h.checksum)
    return e.fail("binary is damaged (size or checksum)");
  *native = b + sizeof h;
  *native_len = h.size;
  return true;
}

bool DecodeError::fail(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return false;
}

// The table's limit where the command socket takes the type (protocol/wire/
// pocl_remote_messages.def), else -1.
int64_t max_command_payload(uint32_t type)
{
  return pocl_remote_msg_taken(type, POCL_RMSG_AT_SERVER_CMD)
             ? pocl_remote_payload_limit(type)
             : -1;
}

bool check_command_header(const pocl_remote_hdr &h, DecodeError &e)
{
  int64_t limit = max_command_payload(h.type);
  if (limit < 0)
    return e.fail("message type %u not allowed on the command socket",
                  h.type);
  if (h.body_size != pocl_remote_body_size(h.type))
    return e.fail("message type %u: body size %u, expected %lld", h.type,
                  h.body_size, (long long)pocl_remote_body_size(h.type));
  if (h.payload_size > uint64_t(limit))
    return e.fail("message type %u: payload %llu over the limit %lld", h.type,
                  (unsigned long long)h.payload_size, (long long)limit);
  return true;
}

bool check_data_header(const pocl_remote_hdr &h, DecodeError &e)
{
  const unsigned lanes = POCL_RMSG_LANE_COUNT(h.type);
  if (h.type == POCL_RMSG_UCX_HELLO) {
    if (h.body_size != pocl_remote_body_size(h.type) ||
        h.payload_size > uint64_t(pocl_remote_payload_limit(h.type)))
      return e.fail("data socket: UCX_HELLO body %u, address %llu bytes",
                    h.body_size, (unsigned long long)h.payload_size);
    return true;
  }
  if (POCL_RMSG_TYPE_OF(h.type) != POCL_RMSG_DATA ||
      h.body_size != pocl_remote_body_size(POCL_RMSG_DATA) ||
      (lanes > POCL_REMOTE_MAX_LANES &&
       lanes != POCL_RMSG_LANE_COUNT(POCL_RMSG_UCX)))
    return e.fail("data socket: message type %#x body %u, expected DATA",
                  h.type, h.body_size);
  return true;
}

bool check_peer_header(const pocl_remote_hdr &h, DecodeError &e)
{
  const uint32_t type = POCL_RMSG_TYPE_OF(h.type);
  const unsigned lanes = POCL_RMSG_LANE_COUNT(h.type);
  // Only PEER_DATA comes in stripes over lanes or over UCX.
  if (!pocl_remote_msg_taken(type, POCL_RMSG_AT_PEER) ||
      h.body_size != pocl_remote_body_size(type) ||
      (lanes != 0 &&
       (type != POCL_RMSG_PEER_DATA ||
        (lanes > POCL_REMOTE_MAX_LANES &&
         lanes != POCL_RMSG_LANE_COUNT(POCL_RMSG_UCX)))))
    return e.fail("peer connection: message type %u body %u refused", h.type,
                  h.body_size);
  if (h.payload_size > uint64_t(pocl_remote_payload_limit(type)))
    return e.fail("peer connection: message type %u with a %llu-byte payload",
                  type, (unsigned long long)h.payload_size);
  return true;
}

bool decode(const pocl_remote_hdr &hdr, const uint8_t *body,
            const uint8_t *payload, Decoded &d, DecodeError &e)
{
  d.hdr = hdr;
  d.body = body;
  d.waits = WaitList{};
  d.args.clear();
  d.svm_regions = nullptr;
  d.svm_count = 0;
  d.data = nullptr;
  d.data_len = 0;
  d.options = nullptr;
  d.header_names.clear();
  d.header_srcs.clear();
  d.file_names.clear();
  d.file_data.clear();
  d.link_inputs.clear();
  switch (hdr.type) {
  case POCL_RMSG_BUILD_PROGRAM:
    return decode_build(d, payload, e);
  case POCL_RMSG_CREATE_KERNEL: {
    auto c = load<pocl_remote_create_kernel>(body);
    if (c.name_len == 0 || c.name_len != hdr.payload_size)
      return e.fail("CREATE_KERNEL: name of %u bytes in a %llu-byte payload",
                    c.name_len, (unsigned long long)hdr.payload_size);
    d.data = payload;
    d.data_len = c.name_len;
    return true;
  }
  case POCL_RMSG_NDRANGE:
  case POCL_RMSG_READ:
  case POCL_RMSG_WRITE:
  case POCL_RMSG_COPY:
  case POCL_RMSG_READ_RECT:
  case POCL_RMSG_WRITE_RECT:
  case POCL_RMSG_COPY_RECT:
  case POCL_RMSG_FILL:
  case POCL_RMSG_READ_IMAGE:
  case POCL_RMSG_WRITE_IMAGE:
  case POCL_RMSG_COPY_IMAGE:
  case POCL_RMSG_FILL_IMAGE:
  case POCL_RMSG_COPY_IMAGE_TO_BUFFER:
  case POCL_RMSG_COPY_BUFFER_TO_IMAGE:
  case POCL_RMSG_MARKER:
  case POCL_RMSG_PUSH:
  case POCL_RMSG_MIGRATE_IN:
  case POCL_RMSG_CMDBUF_RUN:
    return decode_command(d, payload, e);
  case POCL_RMSG_CONNECT_PEER: {
    auto c = load<pocl_remote_connect_peer>(body);
    if (c.host_len == 0 || c.host_len != hdr.payload_size ||
        c.port == 0 || c.port > 65535 || c.self_index >= POCL_REMOTE_MAX_PEERS ||
        c.peer_index >= POCL_REMOTE_MAX_PEERS || c.self_index == c.peer_index)
      return e.fail("CONNECT_PEER: host of %u bytes, port %u, indices %u/%u",
                    c.host_len, c.port, c.self_index, c.peer_index);
    d.data = payload;
    d.data_len = c.host_len;
    return true;
  }
  default:
    // Fixed bodies without a payload (check_command_header made sure).
    return true;
  }
}

} // namespace pocld
