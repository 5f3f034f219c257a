/* pocl_remote_protocol.h - the one definition of the PoCL-R wire protocol.

   Included by the client driver (lib/CL/devices/remote, C) and by pocld
   (C++17).  Every message is a fixed 24-byte header, a fixed-size body whose
   size depends only on the message type, and a variable payload whose layout
   the body describes.  All integers are little-endian; layouts are checked by
   static assertions below.  doc/protocol.md explains the exchanges.  */

#ifndef POCL_REMOTE_PROTOCOL_H
#define POCL_REMOTE_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the PoCL-R wire format is little-endian; big-endian hosts need byte swapping that is not implemented"
#endif

#ifdef __cplusplus
#define POCL_REMOTE_STATIC_ASSERT(c, m) static_assert (c, m)
extern "C" {
#else
#define POCL_REMOTE_STATIC_ASSERT(c, m) _Static_assert (c, m)
#endif

/* "PoCR" */
#define POCL_REMOTE_MAGIC 0x52436f50u
/* Bump on any change of a layout or of the meaning of a field.  */
#define POCL_REMOTE_PROTOCOL_VERSION 24u
#define POCL_REMOTE_DEFAULT_PORT 10998
/* Command socket on P, bulk-data socket on P + 1, peer (server-to-server)
   connections on P + 2 unless the client names another peer address.  */
#define POCL_REMOTE_DATA_PORT_OFFSET 1
#define POCL_REMOTE_PEER_PORT_OFFSET 2
/* The DNS-SD service type pocld advertises (--advertise) and the client
   browses for (POCL_REMOTE_DISCOVERY=avahi), with TXT keys proto (this
   version), devices, psk and tls (0 or 1): hints for people and logs; the
   handshake decides, as for a named server.  */
#define POCL_REMOTE_DNSSD_TYPE "_pocl._tcp"

/* Limits every receiver enforces before allocating.  */
/* Payload of anything but buffer and image data (sources, binaries, logs).  */
#define POCL_REMOTE_MAX_PAYLOAD (256u << 20)
#define POCL_REMOTE_MAX_WAITS 4096u
#define POCL_REMOTE_MAX_ARGS 4096u
/* Commands of one command buffer (CMDBUF_CREATE).  */
#define POCL_REMOTE_MAX_CMDBUF_COMMANDS 65536u
#define POCL_REMOTE_MAX_DEVICES 256u
#define POCL_REMOTE_MAX_STRING (1u << 20)
/* Included files one build may bring (BUILD_PROGRAM num_files).  */
#define POCL_REMOTE_MAX_FILES 4096u
#define POCL_REMOTE_MAX_FILL_PATTERN 128u
#define POCL_REMOTE_MAX_KERNELS 65536u
/* Specialization constants one IL build may set (BUILD_PROGRAM kinds IL and
   IL_COMPILE count); PoCL reads at most this many from a module.  */
#define POCL_REMOTE_MAX_SPEC_CONSTS 4096u
/* Servers one client may introduce to each other (peer indices).  */
#define POCL_REMOTE_MAX_PEERS 64u
#define POCL_REMOTE_MAX_HOST 255u
/* Payloads at least this large travel on the data socket so that they do not
   delay small commands queued behind them (head-of-line blocking).  */
#define POCL_REMOTE_DATA_SOCKET_THRESHOLD (64u << 10)
/* READs of at least this many bytes come back as READ_DATA parts, read
   natively in pieces of POCL_REMOTE_READ_PART bytes, so that the server's
   native read of one piece overlaps the sending of the one before.  */
#define POCL_REMOTE_READ_STREAM_MIN (8u << 20)
#define POCL_REMOTE_READ_PART (4u << 20)

/* Lanes and peer lanes: more TCP streams that carry large payloads in
   stripes (versions 8 and 12).  */
#include "pocl_remote_lanes.h"

/* Where a message is received (the `where` of pocl_remote_messages.def):
   each reader refuses what its socket does not take.  */
#define POCL_RMSG_AT_SERVER_CMD 1u   /* pocld, a client's command socket */
#define POCL_RMSG_AT_SERVER_DATA 2u  /* pocld, a client's data socket */
#define POCL_RMSG_AT_CLIENT_CMD 4u   /* the client, the command socket */
#define POCL_RMSG_AT_CLIENT_DATA 8u  /* the client, the data socket */
#define POCL_RMSG_AT_PEER 16u        /* pocld, a peer link (either end) */
#define POCL_RMSG_HANDSHAKE 32u      /* the handshake's code, either side */

/* The bytes of a command's waits at most (its payload starts with them).  */
#define POCL_REMOTE_MAX_WAITS_BYTES                                           \
  ((uint64_t)POCL_REMOTE_MAX_WAITS * sizeof (pocl_remote_wait))

/* The message types, from the table.  */
typedef enum pocl_remote_msg_type
{
  POCL_RMSG_INVALID = 0,
#define POCL_RMSG(name, number, body_size, where, limit, handler)                      \
  POCL_RMSG_##name = number,
#include "pocl_remote_messages.def"
#undef POCL_RMSG
  POCL_RMSG_TYPE_COUNT = 123 /* above every type */
} pocl_remote_msg_type;

typedef struct pocl_remote_hdr
{
  uint32_t type;         /* pocl_remote_msg_type */
  uint32_t body_size;    /* must equal pocl_remote_body_size (type) */
  uint64_t payload_size; /* bytes after the body */
  uint64_t id;           /* request id or event id, see the types */
} pocl_remote_hdr;

/* The handshake on every connection (doc/protocol.md):
     HELLO -> AUTH_CHALLENGE -> AUTH -> HELLO_REPLY.
   Both sides prove that they know the pre-shared key, when the server has
   one: the server in AUTH_CHALLENGE, the client in AUTH; each proof is
   HMAC-SHA256 over a label, the HELLO and the server's nonce
   (pocl_remote_auth.h).  Without a key the proofs are zero.

   HELLO.  role: which socket this is.  A command socket with an all-zero
   session id asks for a new session; the data socket then presents the id
   it was given.  A peer connection presents the id of the session it joins
   (the client handed it over in CONNECT_PEER) and, in peer_index, the
   client's index of the connecting server.  nonce: fresh random bytes.

   Resume (doc/reconnect.md): a client whose connections broke sends a
   command-role HELLO with its session id to the data port, from any
   address; the HELLO_REPLY then carries the server's counts and both sides
   re-send from their replay logs what the other has not handled, before
   the client's data socket presents the id again.  Counting: every message
   after the handshake on a socket counts 1 in its direction, except ACK;
   seen[0] counts the command socket's, seen[1] the data socket's (a
   session without a data socket counts everything on the command socket).
   A resume of a session the server does not have (restarted, expired) gets
   CL_INVALID_VALUE.  */
#define POCL_REMOTE_NONCE_SIZE 32
#define POCL_REMOTE_MAC_SIZE 32
#define POCL_REMOTE_ROLE_COMMAND 0u
#define POCL_REMOTE_ROLE_DATA 1u
#define POCL_REMOTE_ROLE_PEER 2u
#define POCL_REMOTE_ROLE_LANE 3u
typedef struct pocl_remote_hello
{
  uint32_t magic;
  uint32_t version;
  uint32_t role;
  uint32_t peer_index; /* ROLE_PEER (with its lane's number, see
                          POCL_REMOTE_PEER_HELLO_INDEX); the lane's number
                          for ROLE_LANE */
  uint8_t session_id[16];
  uint64_t client_time_ns; /* CLOCK_REALTIME, for clock-offset estimation */
  uint8_t nonce[POCL_REMOTE_NONCE_SIZE];
  /* resume: the server's messages the client has handled; 0 otherwise */
  uint64_t seen[2];
} pocl_remote_hello;

/* AUTH_CHALLENGE.  flags: POCL_REMOTE_AUTH_REQUIRED when the server has a
   key; proof: the server's, zero without a key.  A client with a key talks
   only to a server that proves it.  */
#define POCL_REMOTE_AUTH_REQUIRED 1u
typedef struct pocl_remote_auth_challenge
{
  uint32_t flags;
  uint32_t reserved;
  uint8_t nonce[POCL_REMOTE_NONCE_SIZE];
  uint8_t proof[POCL_REMOTE_MAC_SIZE];
} pocl_remote_auth_challenge;

/* AUTH: the client's proof, zero without a key.  A server with a key
   answers a wrong one with a HELLO_REPLY of CL_INVALID_VALUE and closes.  */
typedef struct pocl_remote_auth
{
  uint8_t proof[POCL_REMOTE_MAC_SIZE];
} pocl_remote_auth;

/* STARTTLS (doc/protocol.md, TLS).  A server with a certificate takes
   only TLS, and a connection to it starts with this message instead of
   HELLO; the client sends its TLS ClientHello right behind it, and HELLO
   and everything after go inside TLS.  The listener hands a data or peer
   connection to its session's process by `route`, before any TLS, so the
   session id itself, a capability, never travels in the clear: route is
   pocl_remote_route (session id) (pocl_remote_auth.h), zero on a new
   session's command socket.  The session process does the TLS handshake
   and checks the HELLO's session id.  `zero` pads the message to a HELLO's
   112 bytes, so that a server of either kind reads 112 bytes first and
   then knows which one came.  A resume (see HELLO) sends STARTTLS with the
   command role and its session's route to the data port.  */
#define POCL_REMOTE_ROUTE_SIZE 16
typedef struct pocl_remote_starttls
{
  uint32_t magic;
  uint32_t version;
  uint32_t role;
  uint32_t reserved;
  uint8_t route[POCL_REMOTE_ROUTE_SIZE];
  uint8_t zero[56];
} pocl_remote_starttls;

typedef struct pocl_remote_hello_reply
{
  uint32_t magic;
  uint32_t version;
  int32_t status; /* CL_SUCCESS or a refusal code */
  uint32_t num_devices;
  uint8_t session_id[16];
  uint64_t server_time_ns; /* CLOCK_REALTIME when the reply was made */
  /* resume: the client's messages the server has handled; 0 otherwise */
  uint64_t seen[2];
  /* how long the server keeps a session whose client went away for a resume
     (pocld --session-grace): the client tries to resume for as long */
  uint32_t session_grace_ms;
  uint32_t reserved;
} pocl_remote_hello_reply;

typedef struct pocl_remote_ack
{
  uint64_t seen[2];
} pocl_remote_ack;

/* REPLY to a synchronous request.  Payload layout per request:
   DEVICE_INFO: a sequence of pocl_remote_info_entry, each followed by its
     value bytes.
   BUILD_PROGRAM: pocl_remote_build_reply, build log, then num_kernels
     kernel descriptions (pocl_remote_kernel_meta, name, attributes, then
     num_args times pocl_remote_arg_meta, type name, name).
   GET_PROGRAM_BINARY: the binary, at most POCL_REMOTE_MAX_PAYLOAD bytes.
   Others: empty.  */
typedef struct pocl_remote_reply
{
  int32_t status; /* an OpenCL error code */
  uint32_t reserved;
} pocl_remote_reply;

/* DEVICE_INFO: with param 0, every entry the server built for the device;
   otherwise the one entry of that query, or none where the device does not
   answer it (a vendor's query that the client does not know).  */
typedef struct pocl_remote_device_info
{
  uint32_t device; /* index into the server's device list */
  uint32_t param;  /* a cl_device_info, or 0 */
} pocl_remote_device_info;

/* Pseudo-parameter in a DEVICE_INFO reply: the index of the device's
   platform on the server, as a uint32.  Devices of one platform share a
   native context, so buffers move between them with native copies.  */
#define POCL_REMOTE_INFO_PLATFORM_INDEX 0x7E000000u

/* Pseudo-parameter in a DEVICE_INFO reply: the image formats the device
   supports for CL_MEM_READ_WRITE images of type T (a cl_mem_object_type),
   as pairs of uint32 (channel order, channel data type).  */
#define POCL_REMOTE_INFO_IMAGE_FORMATS(T) (0x7F000000u | (uint32_t)(T))

typedef struct pocl_remote_info_entry
{
  uint32_t param; /* a cl_device_info value */
  uint32_t size;  /* value bytes following; 64-bit values are uint64 */
} pocl_remote_info_entry;

typedef struct pocl_remote_create_queue
{
  uint64_t queue_id;
  uint64_t properties; /* cl_command_queue_properties */
  uint32_t device;
  uint32_t reserved;
} pocl_remote_create_queue;

/* flags has CL_MEM_USE_HOST_PTR only for a buffer on SVM memory: the
   payload is then the uint64 address, inside one SVM allocation of the
   session, and the buffer uses that memory.  */
typedef struct pocl_remote_create_buffer
{
  uint64_t mem_id;
  uint64_t flags; /* cl_mem_flags, host-pointer flags removed but that */
  uint64_t size;
  uint32_t device;
  uint32_t reserved;
} pocl_remote_create_buffer;

typedef struct pocl_remote_create_image
{
  uint64_t mem_id;
  uint64_t flags;
  uint32_t device;
  uint32_t image_type;    /* cl_mem_object_type */
  uint32_t channel_order; /* cl_channel_order */
  uint32_t channel_type;  /* cl_channel_type */
  uint64_t width, height, depth, array_size;
  uint64_t row_pitch, slice_pitch; /* 0: let the server choose */
  uint64_t buffer_id;              /* IMAGE1D_BUFFER: the buffer; else 0 */
  uint32_t num_mip_levels, num_samples;
} pocl_remote_create_image;

#define POCL_REMOTE_BUILD_SOURCE 0u  /* payload: options, source */
#define POCL_REMOTE_BUILD_BINARY 1u  /* payload: options, binary */
#define POCL_REMOTE_BUILD_COMPILE 2u /* payload: options, source, headers */
#define POCL_REMOTE_BUILD_LINK 3u    /* payload: options, uint64 prog ids */
/* payload: options, binary; the program is only created (a compiled object
   or library from its binary, an input of a later LINK), not built */
#define POCL_REMOTE_BUILD_LOAD 4u
/* payload: options, the built-in kernel names (version 10): ';'-separated,
   as clCreateProgramWithBuiltInKernels takes them, no NUL; every name must
   be one of the device's CL_DEVICE_BUILT_IN_KERNELS, else CL_INVALID_VALUE.
   The reply describes the kernels in the order of the names.  */
#define POCL_REMOTE_BUILD_BUILTIN 5u
/* payload: options, a SPIR-V module (version 19), then count
   pocl_remote_spec_const: clCreateProgramWithIL, one
   clSetProgramSpecializationConstant each, then clBuildProgram (IL) or
   clCompileProgram (IL_COMPILE).  Only for a device whose
   CL_DEVICE_IL_VERSION names SPIR-V, else CL_INVALID_OPERATION.  */
#define POCL_REMOTE_BUILD_IL 6u
#define POCL_REMOTE_BUILD_IL_COMPILE 7u
typedef struct pocl_remote_build_program
{
  uint64_t prog_id;
  uint32_t device;
  uint32_t kind;        /* POCL_REMOTE_BUILD_* */
  uint32_t options_len; /* bytes, no terminating NUL */
  uint32_t count;       /* COMPILE: headers; LINK: input programs; IL and
                           IL_COMPILE: specialization constants */
  uint64_t body_len;    /* source or binary bytes after the options */
  /* SOURCE and COMPILE: files the source includes from the client's
     include directories, after everything else */
  uint32_t num_files;
  uint32_t reserved;
  /* COMPILE: after the source, count times (uint32 name_len, uint32
     src_len, name, src).  LINK: count uint64 program ids.  IL and
     IL_COMPILE: count pocl_remote_spec_const.  Then num_files
     times (uint32 name_len, uint32 size, name, bytes): name is "k/path",
     path relative to the client's k-th include directory (0: its working
     directory, then each -I in order); pocld writes them into a directory
     of its own and puts -I <it>/k before the options.  */
} pocl_remote_build_program;

/* A specialization constant the application set (BUILD_PROGRAM kinds IL
   and IL_COMPILE): its SPIR-V SpecId, its size (1, 2, 4 or 8 bytes) and
   the value in the low `size` bytes of `value`, little-endian.  */
typedef struct pocl_remote_spec_const
{
  uint32_t id;
  uint32_t size;
  uint64_t value;
} pocl_remote_spec_const;

/* A native binary as pocld hands it out (GET_PROGRAM_BINARY) and takes it
   back (BUILD_PROGRAM kinds BINARY and LOAD): the header names the
   platform and device it was made for and carries a checksum of the size
   native bytes after it, so that pocld refuses a binary of another platform
   or a damaged one with CL_INVALID_BINARY before a vendor library sees it.
   The checksum guards against mistakes, not against a hostile client, whose
   session is a process of its own.  */
#define POCL_REMOTE_BINARY_MAGIC "PoCLRbin"
typedef struct pocl_remote_binary_header
{
  char magic[8];
  uint64_t device_key; /* FNV-1a of the server platform's and device's
                          names and versions */
  uint64_t checksum;   /* FNV-1a 64 of the native bytes */
  uint64_t size;       /* native bytes that follow */
} pocl_remote_binary_header;

typedef struct pocl_remote_build_reply
{
  int32_t build_status; /* cl_build_status */
  uint32_t num_kernels;
  uint64_t log_len;
} pocl_remote_build_reply;

/* What clGetProgramInfo (CL_PROGRAM_BINARIES) returns on the server for
   program prog_id, built by BUILD_PROGRAM for this device, behind a
   pocl_remote_binary_header.  */
typedef struct pocl_remote_get_program_binary
{
  uint64_t prog_id;
  uint32_t device;
  uint32_t reserved;
} pocl_remote_get_program_binary;

typedef struct pocl_remote_kernel_meta
{
  uint32_t name_len;
  uint32_t attributes_len;
  uint32_t num_args;
  uint32_t reserved;
  uint64_t reqd_wg_size[3];
  uint64_t wg_size_hint[3];
  uint64_t local_mem_size;
  uint64_t max_wg_size;           /* CL_KERNEL_WORK_GROUP_SIZE */
  uint64_t preferred_wg_multiple; /* ..._PREFERRED_WORK_GROUP_SIZE_MULTIPLE */
  uint64_t private_mem_size;
} pocl_remote_kernel_meta;

/* type: pocl_argument_type values (0 none/scalar, 1 pointer, 2 image,
   3 sampler, 4 pipe); type_size: bytes of a scalar, 0 when unknown.  */
typedef struct pocl_remote_arg_meta
{
  uint32_t address_qualifier; /* cl_kernel_arg_address_qualifier */
  uint32_t access_qualifier;  /* cl_kernel_arg_access_qualifier */
  uint64_t type_qualifier;    /* cl_kernel_arg_type_qualifier */
  uint32_t type;
  uint32_t type_size;
  uint32_t type_name_len;
  uint32_t name_len;
} pocl_remote_arg_meta;

typedef struct pocl_remote_create_kernel
{
  uint64_t kernel_id;
  uint64_t prog_id;
  uint32_t device;
  uint32_t name_len; /* payload: the name, no NUL */
} pocl_remote_create_kernel;

/* KERNEL_INFO's kinds: clGetKernelWorkGroupInfo or
   clGetKernelSubGroupInfo.  */
#define POCL_REMOTE_KINFO_WORK_GROUP 0u
#define POCL_REMOTE_KINFO_SUB_GROUP 1u
/* the most input a KERNEL_INFO carries (clGetKernelSubGroupInfo's local
   size or count) and the most value its REPLY does */
#define POCL_REMOTE_MAX_KINFO_INPUT 64u
#define POCL_REMOTE_MAX_KINFO_VALUE 4096u
typedef struct pocl_remote_kernel_info
{
  uint64_t kernel_id;
  uint32_t device;
  uint32_t kind;       /* POCL_REMOTE_KINFO_* */
  uint32_t param;      /* cl_kernel_work_group_info or _sub_group_info */
  uint32_t input_size; /* payload: the input value */
  /* the caller's param_value_size, 0 where it asks for the size alone:
     CL_KERNEL_LOCAL_SIZE_FOR_SUB_GROUP_COUNT's dimensions are its */
  uint32_t value_size;
  uint32_t reserved;
} pocl_remote_kernel_info;

typedef struct pocl_remote_create_sampler
{
  uint64_t sampler_id;
  uint32_t device;
  uint32_t normalized_coords;
  uint32_t addressing_mode; /* cl_addressing_mode */
  uint32_t filter_mode;     /* cl_filter_mode */
} pocl_remote_create_sampler;

/* FREE_* and FINISH: the object's id.  */
typedef struct pocl_remote_release
{
  uint64_t obj_id;
} pocl_remote_release;

/* CONNECT_PEER: the client's indices of this server (self) and of the
   peer, and the peer's session and address (host in the payload).  */
typedef struct pocl_remote_connect_peer
{
  uint32_t self_index;
  uint32_t peer_index;
  uint32_t port;
  uint32_t host_len;
  uint8_t session_id[16];
} pocl_remote_connect_peer;

typedef struct pocl_remote_clock
{
  uint64_t monotonic_ns;
} pocl_remote_clock;

typedef struct pocl_remote_subscribe
{
  uint64_t event_id;
  uint32_t peer_index;
  uint32_t reserved;
} pocl_remote_subscribe;

typedef struct pocl_remote_notify
{
  uint64_t event_id;
  int32_t status; /* CL_COMPLETE or a negative error */
  uint32_t reserved;
} pocl_remote_notify;

/* One wait-list entry.  SAME_SERVER: an event of an earlier command sent on
   this session (the server may have retired it: then it is complete).
   FOREIGN: completion arrives as NOTIFY_EVENT from the client, PEER: as
   PEER_NOTIFY from the peer that runs it (before or after).  */
#define POCL_REMOTE_WAIT_SAME_SERVER 0u
#define POCL_REMOTE_WAIT_FOREIGN 1u
#define POCL_REMOTE_WAIT_PEER 2u
typedef struct pocl_remote_wait
{
  uint64_t event_id;
  uint32_t origin;
  uint32_t reserved;
} pocl_remote_wait;

/* cmd.flags */
#define POCL_RCMD_PROFILING 1u           /* report timestamps */
#define POCL_RCMD_DATA_ON_DATA_SOCKET 2u /* WRITE*: bytes come as DATA */
#define POCL_RCMD_BARRIER 4u             /* MARKER: it is a barrier */
/* READ, COPY: mem_cmd.size_id names the source's cl_pocl_content_size
   buffer; only the bytes before the content size are transferred.  */
#define POCL_RCMD_CONTENT_SIZE 8u
/* MARKER: no COMPLETION; the client completes the event itself (it knows
   when the marker's dependencies are done).  The marker still orders the
   server's queue and can be waited on, and subscribed to.  */
#define POCL_RCMD_SILENT 16u
/* The application holds the command's event: its completion is reported as
   soon as it happens, never held back to be reported with a later command
   (pocld's commands without native events, doc/pocld.md).  */
#define POCL_RCMD_WATCHED 32u
/* READ, WRITE, COPY, FILL: src_id and dst_id are SVM addresses inside the
   session's SVM allocations (origins 0, region[0] the byte count).
   NDRANGE: the payload goes on after the arguments with an svm_sync table
   and the bytes of its regions, which the server writes before the kernel
   and sends back in the COMPLETION after it (fine-grained SVM).  */
#define POCL_RCMD_SVM 64u
/* READ: the bytes go to the SVM address dst_id on the server instead of
   back to the client; WRITE: they come from the SVM address src_id, none
   follow.  The client's host memory there is a USM device allocation of a
   CPU device, which the host reaches by faults (data_size 0).  */
#define POCL_RCMD_SVM_HOST 128u

/* The part common to every enqueued command.  */
typedef struct pocl_remote_cmd
{
  uint64_t queue_id;
  uint32_t num_waits;
  uint32_t flags;
} pocl_remote_cmd;

/* Argument kinds in an NDRANGE payload.  Each argument is one
   pocl_remote_arg; a SCALAR is followed by value bytes, padded to 8.  */
#define POCL_REMOTE_ARG_SCALAR 0u  /* a = size in bytes */
#define POCL_REMOTE_ARG_BUFFER 1u  /* a = mem id, b = offset (sub-buffer) */
#define POCL_REMOTE_ARG_NULL 2u    /* a NULL buffer pointer */
#define POCL_REMOTE_ARG_LOCAL 3u   /* a = size of the local allocation */
#define POCL_REMOTE_ARG_IMAGE 4u   /* a = mem id */
#define POCL_REMOTE_ARG_SAMPLER 5u /* a = sampler id */
#define POCL_REMOTE_ARG_SVM 6u     /* a = an address in an SVM allocation */
typedef struct pocl_remote_arg
{
  uint32_t kind;
  uint32_t reserved;
  uint64_t a;
  uint64_t b;
} pocl_remote_arg;

/* SVM_ALLOC's kinds: an SVM allocation (clSVMAlloc), or one of
   cl_intel_unified_shared_memory's, natively where the server's device has
   USM, else on SVM (doc/protocol.md, "Unified shared memory").  */
#define POCL_REMOTE_ALLOC_SVM 0u
#define POCL_REMOTE_ALLOC_USM_HOST 1u
#define POCL_REMOTE_ALLOC_USM_DEVICE 2u
#define POCL_REMOTE_ALLOC_USM_SHARED 3u
typedef struct pocl_remote_svm_alloc
{
  uint64_t size;
  uint64_t flags; /* cl_svm_mem_flags; USM: cl_mem_alloc_flags_intel */
  uint32_t device;
  uint32_t kind; /* POCL_REMOTE_ALLOC_* */
} pocl_remote_svm_alloc;

/* NDRANGE with POCL_RCMD_SVM: after the arguments, one svm_sync with the
   count, then `count` (address, size) regions, then their bytes.  */
typedef struct pocl_remote_svm_sync
{
  uint64_t address;
  uint64_t size;
} pocl_remote_svm_sync;

typedef struct pocl_remote_ndrange
{
  pocl_remote_cmd cmd;
  uint64_t kernel_id;
  uint32_t work_dim;
  uint32_t num_args;
  uint64_t offset[3];
  uint64_t global[3];
  uint64_t local[3]; /* all 0: let the server's runtime choose */
  uint64_t args_size; /* payload bytes after the wait list */
} pocl_remote_ndrange;

/* Every memory command, buffers and images alike.  Buffers use origin[0]
   as the byte offset and region[0] as the byte count.  Unused fields are 0.
   Host-side data (READ*, WRITE*) is always packed: rows of region[0] bytes
   (buffers) or region[0] pixels (images), no padding.  */
typedef struct pocl_remote_mem_cmd
{
  pocl_remote_cmd cmd;
  uint64_t src_id; /* mem id read from (READ*, COPY*) */
  uint64_t dst_id; /* mem id written (WRITE*, COPY*, FILL*) */
  uint64_t src_origin[3];
  uint64_t dst_origin[3];
  uint64_t region[3];
  uint64_t src_row_pitch, src_slice_pitch;
  uint64_t dst_row_pitch, dst_slice_pitch;
  uint64_t data_size; /* bytes in the payload after the waits, or sent as
                         DATA, or expected back in the completion (READ
                         with POCL_RCMD_CONTENT_SIZE: at most) */
  uint64_t size_id;   /* POCL_RCMD_CONTENT_SIZE: the size buffer */
} pocl_remote_mem_cmd;

#include "pocl_remote_cmdbuf.h"

/* PUSH and MIGRATE_IN.  Whole buffers: the destination gets `size` bytes,
   of which only the content size travels when src_size_id is set; the size
   buffer's 8 bytes travel with them into dst_size_id.  */
typedef struct pocl_remote_migrate
{
  pocl_remote_cmd cmd; /* the queue on the server receiving this message */
  uint64_t src_id;     /* buffer on the pushing server */
  uint64_t dst_id;     /* buffer on the receiving server */
  uint64_t src_size_id; /* content-size buffer on the pushing server, or 0 */
  uint64_t dst_size_id; /* its counterpart on the receiving server, or 0 */
  uint64_t size;
  uint32_t peer; /* PUSH: the receiver's peer index; MIGRATE_IN: the
                    pusher's */
  uint32_t reserved;
} pocl_remote_migrate;

/* PEER_DATA: hdr.id is the migration event; the payload is bytes
   [offset, offset + payload_size) of the first `total` bytes of the buffer
   (fewer than its size with a content size).  A large buffer comes as
   several PEER_DATA in offset order, so that the pushing server's reads,
   the network and the receiving server's writes overlap; the migration is
   complete once `total` bytes have arrived.  status < 0: the push failed
   (no bytes; it ends the migration, even after some chunks).  A payload of
   at least POCL_REMOTE_STRIPE_MIN of a buffer may go striped over the peer
   lanes (type | POCL_RMSG_LANES (n)).  A migration with a striped
   PEER_DATA is acknowledged (PEER_ACK), and its pusher keeps the bytes
   until then.
   STATUS_FOLLOWS (version 16): the payload left while the pusher's reads
   still ran, so its bytes count only with the status that follows: a
   PEER_DATA with STATUS, no payload, offset = total, and the migration's
   outcome.  The migration completes once both are in.  */
#define POCL_REMOTE_PEER_DATA_HAS_SIZE 1u
#define POCL_REMOTE_PEER_DATA_STATUS_FOLLOWS 2u
#define POCL_REMOTE_PEER_DATA_STATUS 4u
#define POCL_REMOTE_PEER_DATA_FLAGS 7u
typedef struct pocl_remote_peer_data
{
  int32_t status;
  uint32_t flags;      /* POCL_REMOTE_PEER_DATA_* */
  uint64_t size_value; /* the content-size buffer's value */
  uint64_t offset;
  uint64_t total;
} pocl_remote_peer_data;

/* PEER_ACK: hdr.id is the migration event.  status 0: every byte is in
   (written or not: the receiver reports failures to its client);
   POCL_REMOTE_PEER_ACK_RESEND: a striped PEER_DATA from `offset` on lost
   bytes on a lane (the lanes are gone at both ends), send [offset, total)
   again on the link; the receiver drops the PEER_DATA of later offsets
   until then, and acknowledges again.  */
#define POCL_REMOTE_PEER_ACK_RESEND 1
typedef struct pocl_remote_peer_ack
{
  int32_t status;
  uint32_t reserved;
  uint64_t offset;
} pocl_remote_peer_ack;

/* PEER_RECEIVED.  A peer link's HELLO with seen[1] = POCL_REMOTE_PEER_RESUME
   resumes the link of that index: seen[0] is how many of the accepting
   end's messages the dialing end has handled, and the HELLO_REPLY's
   seen[0] how many of the dialing end's the accepting end has; each sends
   again what the other has not, in order, before anything new.  */
#define POCL_REMOTE_PEER_RESUME 1u
typedef struct pocl_remote_peer_received
{
  uint64_t handled;
} pocl_remote_peer_received;

/* UCX_HELLO.  The end that dials a peer link offers UCX when its policy
   wants it (pocld's --ucx) and sends it right after the HELLO_REPLY; the
   other end answers with its own offer, or declines.  A client that asks
   for UCX (POCL_REMOTE_UCX) offers it on its first data link, and pocld
   answers there; neither is in the replay log nor counted.  A session
   that resumed carries its payloads on TCP from then on.  An end sends payloads over UCX once
   it has the other's offer: the other's worker address (the payload) and
   the secret with which the other tags what it receives
   (pocl_remote_ucx_tag).  */
#define POCL_REMOTE_UCX_OFFER 1u
#define POCL_REMOTE_MAX_UCX_ADDRESS 8192u
typedef struct pocl_remote_ucx_hello
{
  uint32_t flags; /* POCL_REMOTE_UCX_OFFER, or 0: declined */
  uint32_t reserved;
  uint64_t secret;
} pocl_remote_ucx_hello;

/* READ_DATA: bytes [offset, offset + payload_size) of the first `total`
   bytes of a READ's data (total < data_size only with a content size).
   The parts come in offset order and cover [0, total); the COMPLETION that
   follows them has no payload.  A READ that fails after some parts ends
   with a COMPLETION carrying the error.  */
typedef struct pocl_remote_read_data
{
  uint64_t offset;
  uint64_t total;
} pocl_remote_read_data;

/* COMPLETION.  Timestamps are the server's CLOCK_REALTIME-based
   nanoseconds, 0 when the command was not profiled.  */
typedef struct pocl_remote_completion
{
  int32_t status; /* CL_COMPLETE (0) or a negative OpenCL error */
  uint32_t reserved;
  uint64_t ts_queued, ts_submit, ts_start, ts_end;
  uint64_t peer_bytes; /* MIGRATE_IN: payload bytes the peer pushed */
} pocl_remote_completion;

POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_hdr) == 24, "hdr");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_hello) == 88, "hello");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_auth_challenge) == 72, "ac");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_auth) == 32, "auth");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_hello_reply) == 64, "hello r");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_ack) == 16, "ack");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_starttls) == 88, "starttls");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_starttls)
                               == sizeof (pocl_remote_hello),
                           "STARTTLS is as long as HELLO");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_reply) == 8, "reply");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_device_info) == 8, "devinfo");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_info_entry) == 8, "info e");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_create_queue) == 24, "cq");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_create_buffer) == 32, "cb");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_create_image) == 96, "ci");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_build_program) == 40, "bp");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_spec_const) == 16, "sc");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_build_reply) == 16, "br");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_binary_header) == 32, "bh");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_get_program_binary) == 16,
                           "gpb");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_kernel_meta) == 96, "km");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_arg_meta) == 32, "am");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_create_kernel) == 24, "ck");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_kernel_info) == 32, "ki");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_create_sampler) == 24, "cs");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_release) == 8, "rel");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_notify) == 16, "notify");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_clock) == 8, "clock");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_wait) == 16, "wait");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_cmd) == 16, "cmd");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_arg) == 24, "arg");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_ndrange) == 112, "ndr");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_svm_alloc) == 24, "svma");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_svm_sync) == 16, "svms");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_mem_cmd) == 152, "memcmd");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_connect_peer) == 32, "cpeer");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_subscribe) == 16, "subscr");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_migrate) == 64, "migrate");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_peer_data) == 32, "pdata");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_peer_ack) == 16, "pack");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_ucx_hello) == 16, "ucx h");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_peer_received) == 8, "precv");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_read_data) == 16, "rdata");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_completion) == 48, "compl");

/* The fixed body size of each message type, or -1 for an unknown type.
   Receivers reject a header whose body_size differs.  */
static inline int64_t
pocl_remote_body_size (uint32_t type)
{
  switch (type)
    {
#define POCL_RMSG(name, number, body_size, where, limit, handler)                      \
  case POCL_RMSG_##name:                                                      \
    return (int64_t)(body_size);
#include "pocl_remote_messages.def"
#undef POCL_RMSG
    default:
      return -1;
    }
}

/* The message type's name ("NDRANGE"), or NULL for an unknown type.  */
static inline const char *
pocl_remote_msg_name (uint32_t type)
{
  switch (type)
    {
#define POCL_RMSG(name, number, body_size, where, limit, handler)                      \
  case POCL_RMSG_##name:                                                      \
    return #name;
#include "pocl_remote_messages.def"
#undef POCL_RMSG
    default:
      return NULL;
    }
}

/* Whether a message of this type is taken where `at` (POCL_RMSG_AT_*)
   receives it.  */
static inline int
pocl_remote_msg_taken (uint32_t type, uint32_t at)
{
  switch (type)
    {
#define POCL_RMSG(name, number, body_size, where, limit, handler)                      \
  case POCL_RMSG_##name:                                                      \
    return ((where) & at) != 0;
#include "pocl_remote_messages.def"
#undef POCL_RMSG
    default:
      return 0;
    }
}

/* The largest payload a server takes after the body of a message of this
   type, or -1 where no server takes it.  */
static inline int64_t
pocl_remote_payload_limit (uint32_t type)
{
  switch (type)
    {
#define POCL_RMSG(name, number, body_size, where, limit, handler)                      \
  case POCL_RMSG_##name:                                                      \
    return (int64_t)(limit);
#include "pocl_remote_messages.def"
#undef POCL_RMSG
    default:
      return -1;
    }
}

#ifdef __cplusplus
}
#endif

#endif
