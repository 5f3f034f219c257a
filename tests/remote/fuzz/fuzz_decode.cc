// fuzz_decode.cc - libFuzzer target for pocld's message decoder.
//
// The input is what a client could write on pocld's sockets: a sequence of
// messages (24-byte header, body, payload).  Each goes through the very
// functions pocld runs on received bytes (pocld/decode.hh, pocld/control.hh):
// hello_problem and starttls_problem for HELLO and STARTTLS,
// check_data_header for DATA, and for everything else check_command_header
// and then decode.  Body and payload are copied
// into a buffer of exactly their size, so that AddressSanitizer catches any
// read past the message; every view the decoder returns is then read in
// full and checked to lie inside the message.
//
// With -dump=DIR it writes the seed corpus (one small valid message of each
// type, and a session-like sequence) into DIR and exits.
#include "control.hh"
#include "decode.hh"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace pocld;

namespace {

// Messages of the peer link, striped ones too (check_peer_header).
bool peer_type(uint32_t t)
{
  t = POCL_RMSG_TYPE_OF(t);
  return t == POCL_RMSG_PEER_NOTIFY || t == POCL_RMSG_PEER_DATA ||
         t == POCL_RMSG_PEER_ACK;
}

// Traps unless [p, p + n) lies within [lo, hi); reads every byte of it.
volatile uint8_t g_sink;
void touch(const void *p, uint64_t n, const uint8_t *lo, const uint8_t *hi)
{
  if (n == 0)
    return;
  auto *b = static_cast<const uint8_t *>(p);
  if (b == nullptr || b < lo || b > hi || n > uint64_t(hi - b))
    __builtin_trap();
  uint8_t x = 0;
  for (uint64_t i = 0; i < n; ++i)
    x ^= b[i];
  g_sink = x;
}

void check_views(const Decoded &d, const uint8_t *payload, uint64_t len)
{
  const uint8_t *end = payload + len;
  touch(d.waits.raw, uint64_t{d.waits.count} * sizeof(pocl_remote_wait),
        payload, end);
  for (uint32_t i = 0; i < d.waits.count; ++i)
    if (d.waits[i].origin != POCL_REMOTE_WAIT_SAME_SERVER &&
        d.waits[i].origin != POCL_REMOTE_WAIT_FOREIGN &&
        d.waits[i].origin != POCL_REMOTE_WAIT_PEER)
      __builtin_trap();
  for (const ArgView &a : d.args)
    if (a.kind == POCL_REMOTE_ARG_SCALAR)
      touch(a.value, a.a, payload, end);
  touch(d.data, d.data_len, payload, end);
  if (d.hdr.type == POCL_RMSG_BUILD_PROGRAM)
    touch(d.options, d.build.options_len, payload, end);
  for (auto &h : d.header_names)
    touch(h.first, h.second, payload, end);
  for (auto &h : d.header_srcs)
    touch(h.first, h.second, payload, end);
  if (d.hdr.type == POCL_RMSG_NDRANGE && d.args.size() != d.ndrange.num_args)
    __builtin_trap();
}

void one_message(const pocl_remote_hdr &h, const uint8_t *rest, size_t left,
                 Decoded &d)
{
  // Exactly the message's bytes, on the heap: ASan sees any over-read.
  const uint64_t n = uint64_t{h.body_size} + h.payload_size;
  std::vector<uint8_t> buf(rest, rest + n);
  (void)left;
  const uint8_t *body = buf.data();
  const uint8_t *payload = body + h.body_size;
  DecodeError e;
  if (h.type == POCL_RMSG_HELLO || h.type == POCL_RMSG_STARTTLS) {
    HelloMsg m{};
    m.hdr = h;
    memcpy(&m.hello, body,
           h.body_size < sizeof m.hello ? h.body_size : sizeof m.hello);
    bool answer;
    uint32_t role_out;
    SessionId route;
    for (uint32_t role : {POCL_REMOTE_ROLE_COMMAND, POCL_REMOTE_ROLE_DATA,
                          POCL_REMOTE_ROLE_PEER}) {
      hello_problem(m, role, &answer);
      starttls_problem(m, role, &answer, role_out, route);
    }
    return;
  }
  if (peer_type(h.type)) {
    check_peer_header(h, e);
    return;
  }
  if (h.type == POCL_RMSG_DATA) {
    check_data_header(h, e);
    return;
  }
  if (h.type == POCL_RMSG_CMDBUF_CREATE) {
    // the session's handler decodes the entries (cmdbuf.cc)
    static std::vector<CmdBufEntry> entries;
    pocl_remote_cmdbuf_create c;
    memcpy(&c, body, sizeof c);
    if (decode_cmdbuf(payload, h.payload_size, c.num_commands, entries, e)) {
      for (const CmdBufEntry &ce : entries)
        check_views(ce.d, payload, h.payload_size);
    } else if (e.why[0] == '\0')
      __builtin_trap();
    return;
  }
  if (decode(h, body, payload, d, e))
    check_views(d, payload, h.payload_size);
  else if (e.why[0] == '\0')
    __builtin_trap(); // a refusal always says why
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static Decoded d; // reused, as the session reuses its own
  while (size >= sizeof(pocl_remote_hdr)) {
    pocl_remote_hdr h;
    memcpy(&h, data, sizeof h);
    data += sizeof h;
    size -= sizeof h;
    DecodeError e;
    // A HELLO is read whole by the listener (HelloMsg), DATA only on the
    // data socket, PEER_* only on peer connections; everything else must
    // pass the command socket's framing.
    const bool peer = peer_type(h.type);
    bool framed = h.type == POCL_RMSG_HELLO
                      ? h.body_size == sizeof(pocl_remote_hello) &&
                            h.payload_size == 0
                  : h.type == POCL_RMSG_DATA
                      ? check_data_header(h, e) && h.payload_size <= size
                  : peer ? check_peer_header(h, e) && h.payload_size <= size
                         : check_command_header(h, e);
    if (!framed) {
      if (e.why[0] == '\0' && h.type != POCL_RMSG_HELLO &&
          h.type != POCL_RMSG_DATA && !(peer && check_peer_header(h, e)))
        __builtin_trap();
      return 0; // pocld closes the connection here
    }
    uint64_t n = uint64_t{h.body_size} + h.payload_size;
    if (n > size)
      return 0; // pocld would wait for the rest
    one_message(h, data, size, d);
    data += n;
    size -= n;
  }
  return 0;
}

// ---------------------------------------------------------------------
// -dump=DIR: the seed corpus.

namespace {

struct Writer {
  std::string dir;
  std::vector<uint8_t> stream; // every seed, concatenated
  int count = 0;

  static void put(std::vector<uint8_t> &out, const void *p, size_t n)
  {
    out.insert(out.end(), static_cast<const uint8_t *>(p),
               static_cast<const uint8_t *>(p) + n);
  }

  void msg(const char *name, uint32_t type, uint64_t id, const void *body,
           uint32_t body_size, const std::vector<uint8_t> &payload)
  {
    std::vector<uint8_t> out;
    pocl_remote_hdr h{type, body_size, payload.size(), id};
    put(out, &h, sizeof h);
    put(out, body, body_size);
    put(out, payload.data(), payload.size());
    file(name, out);
    stream.insert(stream.end(), out.begin(), out.end());
    // A seed pocld would refuse explores nothing beyond the refusal.
    DecodeError e;
    static Decoded d;
    bool ok = type == POCL_RMSG_HELLO || type == POCL_RMSG_STARTTLS ||
                      type == POCL_RMSG_DATA
                  ? true
              : peer_type(type) ? check_peer_header(h, e)
                  : check_command_header(h, e) &&
                        decode(h, out.data() + sizeof h,
                               out.data() + sizeof h + body_size, d, e);
    if (!ok) {
      fprintf(stderr, "fuzz_decode: seed %s is refused: %s\n", name, e.why);
      exit(1);
    }
  }

  void file(const char *name, const std::vector<uint8_t> &bytes)
  {
    std::string path = dir + "/" + name;
    FILE *f = fopen(path.c_str(), "wb");
    if (f == nullptr || fwrite(bytes.data(), 1, bytes.size(), f) !=
                            bytes.size() || fclose(f) != 0) {
      fprintf(stderr, "fuzz_decode: cannot write %s\n", path.c_str());
      exit(1);
    }
    ++count;
  }
};

std::vector<uint8_t> waits_payload()
{
  std::vector<uint8_t> p;
  pocl_remote_wait w[2] = {{101, POCL_REMOTE_WAIT_SAME_SERVER, 0},
                           {102, POCL_REMOTE_WAIT_FOREIGN, 0}};
  Writer::put(p, w, sizeof w);
  return p;
}

void mem(Writer &w, const char *name, uint32_t type, uint64_t data_size,
         uint32_t flags, const std::vector<uint8_t> &extra, bool rect)
{
  pocl_remote_mem_cmd c{};
  c.cmd.queue_id = 1;
  c.cmd.num_waits = 2;
  c.cmd.flags = flags;
  c.src_id = 0x100;
  c.dst_id = 0x200;
  c.region[0] = rect ? 4 : data_size;
  c.region[1] = rect ? 2 : 1;
  c.region[2] = rect ? 2 : 1;
  c.data_size = data_size;
  std::vector<uint8_t> p = waits_payload();
  p.insert(p.end(), extra.begin(), extra.end());
  w.msg(name, type, 200 + type, &c, sizeof c, p);
}

void dump(const char *dir)
{
  Writer w;
  w.dir = dir;
  pocl_remote_hello hello{POCL_REMOTE_MAGIC, POCL_REMOTE_PROTOCOL_VERSION,
                          POCL_REMOTE_ROLE_COMMAND, 0, {}, 1};
  w.msg("hello_command", POCL_RMSG_HELLO, 0, &hello, sizeof hello, {});
  pocl_remote_hello dhello = hello;
  dhello.role = POCL_REMOTE_ROLE_DATA;
  dhello.session_id[0] = 0xab;
  w.msg("hello_data", POCL_RMSG_HELLO, 0, &dhello, sizeof dhello, {});
  pocl_remote_hello phello = dhello;
  phello.role = POCL_REMOTE_ROLE_PEER;
  phello.peer_index = 1;
  w.msg("hello_peer", POCL_RMSG_HELLO, 0, &phello, sizeof phello, {});
  phello.peer_index = POCL_REMOTE_PEER_HELLO_INDEX(1, 3);
  w.msg("hello_peer_lane", POCL_RMSG_HELLO, 0, &phello, sizeof phello, {});
  pocl_remote_hello rhello = dhello;
  rhello.role = POCL_REMOTE_ROLE_COMMAND;
  rhello.seen[0] = 3;
  rhello.seen[1] = 1;
  w.msg("hello_resume", POCL_RMSG_HELLO, 0, &rhello, sizeof rhello, {});
  pocl_remote_ack ack{{5, 2}};
  w.msg("ack", POCL_RMSG_ACK, 0, &ack, sizeof ack, {});
  w.msg("bye", POCL_RMSG_BYE, 0, nullptr, 0, {});
  pocl_remote_starttls st{POCL_REMOTE_MAGIC, POCL_REMOTE_PROTOCOL_VERSION,
                          POCL_REMOTE_ROLE_COMMAND, 0, {}, {}};
  w.msg("starttls_command", POCL_RMSG_STARTTLS, 0, &st, sizeof st, {});
  st.role = POCL_REMOTE_ROLE_DATA;
  st.route[0] = 0xcd;
  w.msg("starttls_data", POCL_RMSG_STARTTLS, 0, &st, sizeof st, {});

  pocl_remote_device_info di{0, 0};
  w.msg("device_info", POCL_RMSG_DEVICE_INFO, 1, &di, sizeof di, {});
  pocl_remote_create_queue cq{1, 0, 0, 0};
  w.msg("create_queue", POCL_RMSG_CREATE_QUEUE, 2, &cq, sizeof cq, {});
  pocl_remote_create_buffer cb{0x100, 1, 4096, 0, 0};
  w.msg("create_buffer", POCL_RMSG_CREATE_BUFFER, 3, &cb, sizeof cb, {});
  pocl_remote_create_image ci{};
  ci.mem_id = 0x300;
  ci.image_type = 0x10F1; // CL_MEM_OBJECT_IMAGE2D
  ci.channel_order = 0x10B5; // CL_RGBA
  ci.channel_type = 0x10D2;  // CL_UNORM_INT8
  ci.width = ci.height = 8;
  w.msg("create_image", POCL_RMSG_CREATE_IMAGE, 4, &ci, sizeof ci, {});

  const std::string opts = "-cl-std=CL1.2";
  const std::string src = "kernel void k(global int *a, int b) { *a = b; }";
  pocl_remote_build_program bp{};
  bp.prog_id = 0x400;
  bp.options_len = uint32_t(opts.size());
  bp.body_len = src.size();
  std::vector<uint8_t> p(opts.begin(), opts.end());
  p.insert(p.end(), src.begin(), src.end());
  bp.kind = POCL_REMOTE_BUILD_SOURCE;
  w.msg("build_source", POCL_RMSG_BUILD_PROGRAM, 5, &bp, sizeof bp, p);
  bp.kind = POCL_REMOTE_BUILD_BINARY;
  w.msg("build_binary", POCL_RMSG_BUILD_PROGRAM, 6, &bp, sizeof bp, p);
  bp.kind = POCL_REMOTE_BUILD_COMPILE;
  bp.count = 2;
  std::vector<uint8_t> pc = p;
  for (const char *hdr : {"a.h", "dir/b.h"}) {
    const std::string text = std::string("#define ") + (hdr[0] == 'a' ? "A" : "B");
    uint32_t lens[2] = {uint32_t(strlen(hdr)), uint32_t(text.size())};
    Writer::put(pc, lens, sizeof lens);
    Writer::put(pc, hdr, lens[0]);
    Writer::put(pc, text.data(), lens[1]);
  }
  w.msg("build_compile", POCL_RMSG_BUILD_PROGRAM, 7, &bp, sizeof bp, pc);
  bp.kind = POCL_REMOTE_BUILD_LINK;
  bp.body_len = 0;
  std::vector<uint8_t> pl(opts.begin(), opts.end());
  uint64_t ids[2] = {0x400, 0x500};
  Writer::put(pl, ids, sizeof ids);
  w.msg("build_link", POCL_RMSG_BUILD_PROGRAM, 8, &bp, sizeof bp, pl);
  const std::string builtins = "pocl.add.i8;org.khronos.openvx.scale_image.nn.u8";
  bp.kind = POCL_REMOTE_BUILD_BUILTIN;
  bp.count = 0;
  bp.options_len = 0;
  bp.body_len = builtins.size();
  w.msg("build_builtin", POCL_RMSG_BUILD_PROGRAM, 14, &bp, sizeof bp,
        std::vector<uint8_t>(builtins.begin(), builtins.end()));
  // A SPIR-V header (magic, version 1.2, generator, bound, schema) and
  // two specialization constants.
  const uint32_t spirv[5] = {0x07230203, 0x00010200, 0, 8, 0};
  const pocl_remote_spec_const sc[2] = {{1, 4, 42}, {7, 1, 1}};
  bp.kind = POCL_REMOTE_BUILD_IL;
  bp.count = 2;
  bp.body_len = sizeof spirv;
  std::vector<uint8_t> pi;
  Writer::put(pi, spirv, sizeof spirv);
  Writer::put(pi, sc, sizeof sc);
  w.msg("build_il", POCL_RMSG_BUILD_PROGRAM, 15, &bp, sizeof bp, pi);

  const std::string kname = "k";
  pocl_remote_create_kernel ck{0x600, 0x400, 0, uint32_t(kname.size())};
  w.msg("create_kernel", POCL_RMSG_CREATE_KERNEL, 9, &ck, sizeof ck,
        std::vector<uint8_t>(kname.begin(), kname.end()));
  pocl_remote_get_program_binary gb{0x400, 0, 0};
  w.msg("get_program_binary", POCL_RMSG_GET_PROGRAM_BINARY, 13, &gb,
        sizeof gb, {});
  pocl_remote_create_sampler cs{0x700, 0, 1, 0x1132, 0x1140};
  w.msg("create_sampler", POCL_RMSG_CREATE_SAMPLER, 10, &cs, sizeof cs, {});
  pocl_remote_release rel{1};
  w.msg("finish", POCL_RMSG_FINISH, 11, &rel, sizeof rel, {});
  pocl_remote_notify nt{102, 0, 0};
  w.msg("notify_event", POCL_RMSG_NOTIFY_EVENT, 0, &nt, sizeof nt, {});
  pocl_remote_subscribe sub{101, 1, 0};
  w.msg("subscribe", POCL_RMSG_SUBSCRIBE, 0, &sub, sizeof sub, {});
  const std::string host = "127.0.0.1";
  pocl_remote_connect_peer cp{0, 1, 11000, uint32_t(host.size()), {0xab}};
  w.msg("connect_peer", POCL_RMSG_CONNECT_PEER, 12, &cp, sizeof cp,
        std::vector<uint8_t>(host.begin(), host.end()));
  pocl_remote_migrate mg{};
  mg.cmd = pocl_remote_cmd{1, 2, 0};
  mg.src_id = 0x100;
  mg.dst_id = 0x200;
  mg.src_size_id = 0x400;
  mg.dst_size_id = 0x500;
  mg.size = 4096;
  mg.peer = 1;
  w.msg("push", POCL_RMSG_PUSH, 400, &mg, sizeof mg, waits_payload());
  w.msg("migrate_in", POCL_RMSG_MIGRATE_IN, 400, &mg, sizeof mg,
        waits_payload());
  w.msg("peer_notify", POCL_RMSG_PEER_NOTIFY, 0, &nt, sizeof nt, {});
  pocl_remote_peer_data pd{0, POCL_REMOTE_PEER_DATA_HAS_SIZE, 16, 0, 16};
  w.msg("peer_data", POCL_RMSG_PEER_DATA, 400, &pd, sizeof pd,
        std::vector<uint8_t>(16, 0x5a));
  // Striped over 2 peer lanes: 16 bytes are one stripe, stream 0's, which
  // the link carries after header and body.
  w.msg("peer_data_striped", POCL_RMSG_PEER_DATA | POCL_RMSG_LANES(2), 400,
        &pd, sizeof pd, std::vector<uint8_t>(16, 0x5a));
  pocl_remote_peer_ack pa{POCL_REMOTE_PEER_ACK_RESEND, 0, 4096};
  w.msg("peer_ack", POCL_RMSG_PEER_ACK, 400, &pa, sizeof pa, {});

  // NDRANGE with one argument of every kind.
  pocl_remote_ndrange nd{};
  nd.cmd.queue_id = 1;
  nd.cmd.num_waits = 2;
  nd.kernel_id = 0x600;
  nd.work_dim = 2;
  nd.global[0] = nd.global[1] = 16;
  nd.global[2] = 1;
  std::vector<uint8_t> args;
  auto arg = [&](uint32_t kind, uint64_t a, uint64_t b, const void *v,
                 size_t vlen) {
    pocl_remote_arg ra{kind, 0, a, b};
    Writer::put(args, &ra, sizeof ra);
    std::vector<uint8_t> val(static_cast<const uint8_t *>(v),
                             static_cast<const uint8_t *>(v) + vlen);
    val.resize((vlen + 7) & ~size_t{7});
    args.insert(args.end(), val.begin(), val.end());
    ++nd.num_args;
  };
  int32_t b = 7;
  arg(POCL_REMOTE_ARG_BUFFER, 0x100, 64, nullptr, 0);
  arg(POCL_REMOTE_ARG_SCALAR, sizeof b, 0, &b, sizeof b);
  arg(POCL_REMOTE_ARG_NULL, 0, 0, nullptr, 0);
  arg(POCL_REMOTE_ARG_LOCAL, 256, 0, nullptr, 0);
  arg(POCL_REMOTE_ARG_IMAGE, 0x300, 0, nullptr, 0);
  arg(POCL_REMOTE_ARG_SAMPLER, 0x700, 0, nullptr, 0);
  nd.args_size = args.size();
  std::vector<uint8_t> pn = waits_payload();
  pn.insert(pn.end(), args.begin(), args.end());
  w.msg("ndrange", POCL_RMSG_NDRANGE, 100, &nd, sizeof nd, pn);

  const std::vector<uint8_t> bytes16(16, 0x5a);
  mem(w, "read", POCL_RMSG_READ, 16, 0, {}, false);
  mem(w, "write", POCL_RMSG_WRITE, 16, 0, bytes16, false);
  mem(w, "write_data_socket", POCL_RMSG_WRITE, 16,
      POCL_RCMD_DATA_ON_DATA_SOCKET, {}, false);
  mem(w, "copy", POCL_RMSG_COPY, 16, 0, {}, false);
  mem(w, "read_rect", POCL_RMSG_READ_RECT, 16, 0, {}, true);
  mem(w, "write_rect", POCL_RMSG_WRITE_RECT, 16, 0, bytes16, true);
  mem(w, "copy_rect", POCL_RMSG_COPY_RECT, 16, 0, {}, true);
  mem(w, "fill", POCL_RMSG_FILL, 4, 0, std::vector<uint8_t>(4, 1), false);
  mem(w, "read_image", POCL_RMSG_READ_IMAGE, 64, 0, {}, true);
  mem(w, "write_image", POCL_RMSG_WRITE_IMAGE, 64, 0,
      std::vector<uint8_t>(64, 3), true);
  mem(w, "copy_image", POCL_RMSG_COPY_IMAGE, 0, 0, {}, true);
  mem(w, "fill_image", POCL_RMSG_FILL_IMAGE, 0, 0, bytes16, true);
  mem(w, "copy_image_to_buffer", POCL_RMSG_COPY_IMAGE_TO_BUFFER, 0, 0, {},
      true);
  mem(w, "copy_buffer_to_image", POCL_RMSG_COPY_BUFFER_TO_IMAGE, 0, 0, {},
      true);
  pocl_remote_cmd mk{1, 2, POCL_RCMD_BARRIER};
  w.msg("marker", POCL_RMSG_MARKER, 300, &mk, sizeof mk, waits_payload());
  // A command buffer of a FILL and a kernel waiting for it, its run, its
  // release.
  {
    std::vector<uint8_t> p;
    pocl_remote_mem_cmd f{};
    f.dst_id = 0x100;
    f.region[0] = 64;
    f.data_size = 4;
    uint32_t nine = 9;
    pocl_remote_cmdbuf_entry ef{POCL_RMSG_FILL, 0, sizeof f + 4};
    Writer::put(p, &ef, sizeof ef);
    Writer::put(p, &f, sizeof f);
    Writer::put(p, &nine, 4);
    pocl_remote_ndrange nd{};
    nd.kernel_id = 0x300;
    nd.work_dim = 1;
    nd.num_args = 1;
    nd.global[0] = 16;
    nd.global[1] = nd.global[2] = 1;
    nd.args_size = sizeof(pocl_remote_arg);
    pocl_remote_arg a{POCL_REMOTE_ARG_BUFFER, 0, 0x100, 0};
    pocl_remote_cmdbuf_entry en{POCL_RMSG_NDRANGE, 1, sizeof nd + sizeof a};
    uint32_t sync[2] = {0, 0};
    Writer::put(p, &en, sizeof en);
    Writer::put(p, sync, sizeof sync);
    Writer::put(p, &nd, sizeof nd);
    Writer::put(p, &a, sizeof a);
    pocl_remote_cmdbuf_create cc{0x600, 1, 2, 0};
    std::vector<CmdBufEntry> entries;
    DecodeError e;
    if (!decode_cmdbuf(p.data(), p.size(), cc.num_commands, entries, e)) {
      fprintf(stderr, "fuzz_decode: seed cmdbuf_create is refused: %s\n",
              e.why);
      exit(1);
    }
    w.msg("cmdbuf_create", POCL_RMSG_CMDBUF_CREATE, 7, &cc, sizeof cc, p);
    pocl_remote_cmdbuf_run run{{1, 2, 0}, 0x600};
    w.msg("cmdbuf_run", POCL_RMSG_CMDBUF_RUN, 301, &run, sizeof run,
          waits_payload());
    pocl_remote_release cr{0x600};
    w.msg("cmdbuf_free", POCL_RMSG_CMDBUF_FREE, 0, &cr, sizeof cr, {});
  }
  w.msg("data", POCL_RMSG_DATA, 203, nullptr, 0, bytes16);
  for (uint32_t t : {POCL_RMSG_FREE_QUEUE, POCL_RMSG_FREE_BUFFER,
                     POCL_RMSG_FREE_PROGRAM, POCL_RMSG_FREE_KERNEL,
                     POCL_RMSG_FREE_SAMPLER}) {
    std::string name = "free_" + std::to_string(t);
    w.msg(name.c_str(), t, 0, &rel, sizeof rel, {});
  }
  std::vector<uint8_t> all = w.stream;
  w.file("session", all);
  fprintf(stderr, "fuzz_decode: wrote %d seeds into %s\n", w.count, dir);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  for (int i = 1; i < *argc; ++i)
    if (strncmp((*argv)[i], "-dump=", 6) == 0) {
      dump((*argv)[i] + 6);
      exit(0);
    }
  return 0;
}
