/* pocl_remote_cmdbuf.h - the wire layout of command buffers; included by
   pocl_remote_protocol.h after pocl_remote_cmd, whose conventions it
   follows (fixed sizes, little-endian, checked below).  */

#ifndef POCL_REMOTE_CMDBUF_H
#define POCL_REMOTE_CMDBUF_H

/* A command buffer (cl_khr_command_buffer), recorded on the client and made
   once on the server (doc/protocol.md, "Command buffers").  CMDBUF_CREATE
   (a request) carries num_commands entries in recording order, each a
   cmdbuf_entry, then num_syncs uint32 sync points (indices of earlier
   entries whose commands it waits for; padded with zeros to 8 bytes), then
   `size` bytes: the body of the message of the entry's type (NDRANGE, COPY,
   COPY_RECT, FILL, or MARKER with POCL_RCMD_BARRIER), cmd.num_waits 0, and
   that message's payload after its (empty) wait list.  The server checks
   every entry as it checks that message, and answers CL_SUCCESS with a
   uint32 payload, POCL_REMOTE_CMDBUF_NATIVE or _EMULATED, or an error
   (the first entry refused).  */
#define POCL_REMOTE_CMDBUF_NATIVE 1u   /* the device's cl_khr_command_buffer */
#define POCL_REMOTE_CMDBUF_EMULATED 2u /* pocld enqueues the entries itself */
typedef struct pocl_remote_cmdbuf_create
{
  uint64_t cmdbuf_id;
  uint64_t queue_id; /* the queue it was recorded for */
  uint32_t num_commands;
  uint32_t flags; /* 0 */
} pocl_remote_cmdbuf_create;

typedef struct pocl_remote_cmdbuf_entry
{
  uint32_t type; /* a POCL_RMSG_* type, see above */
  uint32_t num_syncs;
  uint64_t size; /* body and payload bytes after the sync points */
} pocl_remote_cmdbuf_entry;

/* CMDBUF_RUN: every command of the buffer once, behind the wait list in the
   payload, on queue cmd.queue_id (one of the recording queue's device and
   properties); one COMPLETION when all have run.  */
typedef struct pocl_remote_cmdbuf_run
{
  pocl_remote_cmd cmd;
  uint64_t cmdbuf_id;
} pocl_remote_cmdbuf_run;

POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_cmdbuf_create) == 24, "cbc");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_cmdbuf_entry) == 16, "cbe");
POCL_REMOTE_STATIC_ASSERT (sizeof (pocl_remote_cmdbuf_run) == 24, "cbr");

#endif
