/* remote_program.c - programs and kernels: builds run on the server, which
   returns the build log and the kernel metadata.  The server's native binary
   is fetched only when PoCL serialises the program (clGetProgramInfo of
   CL_PROGRAM_BINARIES): making it can cost a PoCL server a second
   compilation of every kernel.  */

#include <string.h>

#include "common.h"
#include "pocl_cache.h"
#include "pocl_file_util.h"
#include "pocl_hash.h"
#include "pocl_util.h"
#include "remote.h"

/* What the server's compiler decided for a kernel
   (clGetKernelWorkGroupInfo).  */
typedef struct remote_kernel_info
{
  uint64_t max_wg_size, preferred_wg_multiple, local_mem_size,
      private_mem_size;
} remote_kernel_info;

/* What a BUILD_PROGRAM reply told about the kernels: the metadata, kept
   until PoCL asks for it in setup_metadata, and their work-group info, in
   the same order, kept with the program.  */
typedef struct remote_program
{
  size_t num_kernels;
  pocl_kernel_metadata_t *meta;
  remote_kernel_info *info;
} remote_program;

/* A bounds-checked reader over a reply payload: the server is not
   trusted.  */
typedef struct reader
{
  const char *p;
  uint64_t left;
  int bad;
} reader;

static const char *
take (reader *r, uint64_t n)
{
  if (r->bad || n > r->left)
    {
      r->bad = 1;
      return NULL;
    }
  const char *p = r->p;
  r->p += n;
  r->left -= n;
  return p;
}

static char *
take_string (reader *r, uint64_t n)
{
  const char *p = take (r, n);
  char *s = p ? malloc (n + 1) : NULL;
  if (s == NULL)
    {
      r->bad = 1;
      return NULL;
    }
  memcpy (s, p, n);
  s[n] = 0;
  return s;
}

/* meta: NULL once it was handed to PoCL */
static void
free_meta (pocl_kernel_metadata_t *meta, size_t n)
{
  size_t i, j;
  for (i = 0; meta != NULL && i < n; ++i)
    {
      for (j = 0; meta[i].arg_info && j < meta[i].num_args; ++j)
        {
          free (meta[i].arg_info[j].name);
          free (meta[i].arg_info[j].type_name);
        }
      free (meta[i].arg_info);
      free (meta[i].name);
      free (meta[i].attributes);
    }
  free (meta);
}

static int
parse_kernel (reader *r, pocl_kernel_metadata_t *k, remote_kernel_info *info)
{
  pocl_remote_kernel_meta km;
  const char *p = take (r, sizeof (km));
  unsigned i;
  if (p == NULL)
    return -1;
  memcpy (&km, p, sizeof (km));
  if (km.num_args > POCL_REMOTE_MAX_ARGS
      || km.name_len > POCL_REMOTE_MAX_STRING
      || km.attributes_len > POCL_REMOTE_MAX_STRING)
    return -1;
  k->name = take_string (r, km.name_len);
  k->attributes
      = km.attributes_len ? take_string (r, km.attributes_len) : NULL;
  k->num_args = km.num_args;
  k->has_arg_metadata = (cl_bitfield)-1;
  info->max_wg_size = km.max_wg_size;
  info->preferred_wg_multiple = km.preferred_wg_multiple;
  info->local_mem_size = km.local_mem_size;
  info->private_mem_size = km.private_mem_size;
  for (i = 0; i < 3; ++i)
    {
      k->reqd_wg_size[i] = km.reqd_wg_size[i];
      k->wg_size_hint[i] = km.wg_size_hint[i];
    }
  k->arg_info = calloc (km.num_args ? km.num_args : 1,
                        sizeof (struct pocl_argument_info));
  if (k->arg_info == NULL || r->bad)
    return -1;
  for (i = 0; i < km.num_args; ++i)
    {
      pocl_remote_arg_meta am;
      struct pocl_argument_info *ai = &k->arg_info[i];
      p = take (r, sizeof (am));
      if (p == NULL)
        return -1;
      memcpy (&am, p, sizeof (am));
      if (am.type > POCL_ARG_TYPE_SAMPLER || am.type_name_len > 4096
          || am.name_len > 4096)
        return -1;
      ai->address_qualifier = am.address_qualifier;
      ai->access_qualifier = am.access_qualifier;
      ai->type_qualifier = am.type_qualifier;
      ai->type = (pocl_argument_type)am.type;
      ai->type_size = am.type_size;
      ai->type_name = take_string (r, am.type_name_len);
      ai->name = take_string (r, am.name_len);
      if (r->bad)
        return -1;
    }
  return 0;
}

/* Stores log and kernel metadata of a BUILD_PROGRAM reply.  */
static cl_int
apply_build_reply (cl_program program, cl_uint device_i, const char *payload,
                   uint64_t size)
{
  reader r = { payload, size, 0 };
  pocl_remote_build_reply br;
  const char *p = take (&r, sizeof (br));
  size_t i;
  if (p == NULL)
    return CL_INVALID_BINARY;
  memcpy (&br, p, sizeof (br));
  if (br.num_kernels > POCL_REMOTE_MAX_KERNELS)
    return CL_INVALID_BINARY;

  POCL_MEM_FREE (program->build_log[device_i]);
  program->build_log[device_i] = take_string (&r, br.log_len);

  if (br.num_kernels == 0 || r.bad)
    return r.bad ? CL_INVALID_BINARY : CL_SUCCESS;

  remote_program *rp = calloc (1, sizeof (remote_program));
  pocl_kernel_metadata_t *meta
      = calloc (br.num_kernels, sizeof (pocl_kernel_metadata_t));
  remote_kernel_info *info
      = calloc (br.num_kernels, sizeof (remote_kernel_info));
  if (rp == NULL || meta == NULL || info == NULL)
    {
      free (rp);
      free (meta);
      free (info);
      return CL_OUT_OF_HOST_MEMORY;
    }
  for (i = 0; i < br.num_kernels; ++i)
    if (parse_kernel (&r, &meta[i], &info[i]))
      {
        free_meta (meta, br.num_kernels);
        free (info);
        free (rp);
        POCL_MSG_ERR ("remote: malformed kernel metadata from server\n");
        return CL_INVALID_BINARY;
      }
  rp->num_kernels = br.num_kernels;
  rp->meta = meta;
  rp->info = info;
  /* PoCL frees a program's driver data before a rebuild only when it was
     built from source; one made from a binary still has the last build's.  */
  remote_program *old = (remote_program *)program->data[device_i];
  if (old != NULL)
    {
      free_meta (old->meta, old->num_kernels);
      free (old->info);
      free (old);
    }
  program->data[device_i] = rp;
  return CL_SUCCESS;
}

/* The build hash names the program's cache directory: SHA1 of `pieces`
   and the device's hash.  */
static void
set_build_hash (cl_program program, cl_uint device_i,
                const struct iovec *pieces, int n)
{
  cl_device_id device = program->devices[device_i];
  SHA1_CTX ctx;
  uint8_t digest[SHA1_DIGEST_SIZE];
  char *dev_hash = device->ops->build_hash (device);
  int i;

  pocl_SHA1_Init (&ctx);
  for (i = 0; i < n; ++i)
    pocl_SHA1_Update (&ctx, pieces[i].iov_base, pieces[i].iov_len);
  pocl_SHA1_Update (&ctx, (const uint8_t *)dev_hash, strlen (dev_hash));
  free (dev_hash);
  pocl_SHA1_Final (&ctx, digest);

  unsigned char *h = program->build_hash[device_i];
  for (i = 0; i < SHA1_DIGEST_SIZE; i++)
    {
      *h++ = (digest[i] & 0x0F) + 65;
      *h++ = ((digest[i] & 0xF0) >> 4) + 65;
    }
  *h = 0;
  program->build_hash[device_i][2] = '/';
}

/* Included files that go with a build (remote_includes.c).  */
typedef struct build_files
{
  char *packed;
  size_t len;
  uint32_t count;
} build_files;

/* prefix: options PoCL consumed that the server's compiler needs back;
   files: NULL, or what a source includes from this client's directories */
static cl_int
build (cl_program program, cl_uint device_i, uint32_t kind, const char *prefix,
       const struct iovec *body_iov, int body_count, uint32_t count,
       uint64_t body_len, const build_files *files)
{
  cl_device_id dev = program->devices[device_i];
  remote_device_data *d = (remote_device_data *)dev->data;
  remote_server *s = pocl_remote_session_for (dev, program->context);
  pocl_remote_build_program bp;
  const char *opts
      = program->compiler_options ? program->compiler_options : "";
  struct iovec iov[6];
  int i, n = 0;

  memset (&bp, 0, sizeof (bp));
  bp.prog_id = pocl_remote_wire_id (program->id, dev);
  bp.device = d->server_device;
  bp.kind = kind;
  bp.options_len = (uint32_t)(strlen (prefix) + strlen (opts));
  bp.count = count;
  bp.body_len = body_len;
  iov[n].iov_base = (void *)prefix;
  iov[n++].iov_len = strlen (prefix);
  iov[n].iov_base = (void *)opts;
  iov[n++].iov_len = strlen (opts);
  for (i = 0; i < body_count; ++i)
    iov[n++] = body_iov[i];
  if (files != NULL && files->count > 0)
    {
      bp.num_files = files->count;
      iov[n].iov_base = files->packed;
      iov[n++].iov_len = files->len;
    }

  void *reply = NULL;
  uint64_t reply_size = 0;
  if (s == NULL)
    return CL_DEVICE_NOT_AVAILABLE;
  cl_int err = pocl_remote_request (s, POCL_RMSG_BUILD_PROGRAM, &bp,
                                    sizeof (bp), iov, n, &reply, &reply_size);
  if (reply)
    {
      cl_int perr = apply_build_reply (program, device_i, reply, reply_size);
      if (err == CL_SUCCESS)
        err = perr;
    }
  free (reply);
  /* The cache directory until the binary is fetched: for a binary, where
     PoCL unpacked it from a PoCL binary of this driver (named after its
     content); else one named after what the build was made from, with
     nothing in it.  */
  if (err == CL_SUCCESS && kind == POCL_REMOTE_BUILD_BINARY)
    set_build_hash (program, device_i, body_iov, body_count);
  else if (err == CL_SUCCESS && kind != POCL_REMOTE_BUILD_LOAD)
    set_build_hash (program, device_i, iov, n);
  return err;
}

static int
pocl_remote_build_source (cl_program program, cl_uint device_i,
                          cl_uint num_input_headers,
                          const cl_program *input_headers,
                          const char **header_include_names, int link_program)
{
  /* the source after the device's prefix (hidden macros undefined) */
  const char *prefix = ((remote_device_data *)program->devices[device_i]->data)
                           ->source_prefix;
  struct iovec iov[3];
  int nsrc = prefix != NULL ? 2 : 1;
  iov[0].iov_base = (void *)prefix;
  iov[0].iov_len = prefix != NULL ? strlen (prefix) : 0;
  iov[nsrc - 1].iov_base = program->source;
  iov[nsrc - 1].iov_len = strlen (program->source);
  size_t src_len = iov[0].iov_len + (nsrc == 2 ? iov[1].iov_len : 0);
  build_files files;
  int err = pocl_remote_pack_includes (
      program->source,
      program->compiler_options ? program->compiler_options : "",
      &files.packed, &files.len, &files.count);
  if (err != CL_SUCCESS)
    return err;
  if (link_program)
    {
      err = build (program, device_i, POCL_REMOTE_BUILD_SOURCE, "", iov,
                   nsrc, 0, src_len, &files);
      free (files.packed);
      return err;
    }

  /* clCompileProgram: headers travel as (name_len, src_len, name, src) */
  size_t total = 0;
  cl_uint i;
  for (i = 0; i < num_input_headers; ++i)
    total += 8 + strlen (header_include_names[i])
             + strlen (input_headers[i]->source);
  char *headers = malloc (total ? total : 1), *p = headers;
  if (headers == NULL)
    {
      free (files.packed);
      return CL_OUT_OF_HOST_MEMORY;
    }
  for (i = 0; i < num_input_headers; ++i)
    {
      uint32_t lens[2] = { (uint32_t)strlen (header_include_names[i]),
                           (uint32_t)strlen (input_headers[i]->source) };
      memcpy (p, lens, 8);
      memcpy (p + 8, header_include_names[i], lens[0]);
      memcpy (p + 8 + lens[0], input_headers[i]->source, lens[1]);
      p += 8 + lens[0] + lens[1];
    }
  iov[nsrc].iov_base = headers;
  iov[nsrc].iov_len = total;
  err = build (program, device_i, POCL_REMOTE_BUILD_COMPILE, "", iov,
               nsrc + 1, num_input_headers, src_len, &files);
  free (headers);
  free (files.packed);
  return err;
}

/* A program made from IL (clCreateProgramWithIL): the server's device
   makes it from the same module, with the specialization constants the
   application set.  link_program 0: clCompileProgram.  */
static int
build_il (cl_program program, cl_uint device_i, int link_program)
{
  cl_uint i, n = 0;
  pocl_remote_spec_const *sc = calloc (
      program->num_spec_consts ? program->num_spec_consts : 1, sizeof (*sc));
  if (sc == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  for (i = 0; i < program->num_spec_consts; ++i)
    if (program->spec_const_is_set[i])
      {
        sc[n].id = program->spec_const_ids[i];
        sc[n].size = program->spec_const_sizes[i];
        sc[n++].value = program->spec_const_values[i];
      }
  struct iovec iov[2] = { { program->program_il, program->program_il_size },
                          { sc, n * sizeof (*sc) } };
  int err = build (program, device_i,
                   link_program ? POCL_REMOTE_BUILD_IL
                                : POCL_REMOTE_BUILD_IL_COMPILE,
                   "", iov, 2, n, program->program_il_size, NULL);
  free (sc);
  return err;
}

static int
pocl_remote_build_binary (cl_program program, cl_uint device_i,
                          int link_program, int spir_build)
{
  if (program->program_il != NULL && program->program_il_size > 0)
    return build_il (program, device_i, link_program);
  POCL_RETURN_ERROR_ON ((program->binaries[device_i] == NULL),
                        CL_INVALID_BINARY,
                        "remote: no server binary for this device\n");
  struct iovec iov
      = { program->binaries[device_i], program->binary_sizes[device_i] };
  return build (program, device_i, POCL_REMOTE_BUILD_BINARY,
                spir_build ? "-x spir -spir-std=1.2 " : "", &iov, 1, 0,
                iov.iov_len, NULL);
}

/* clCreateProgramWithBuiltInKernels: the server makes a program of the
   same names natively, builds it and describes its kernels in the order of
   the names, as a local device's metadata lists them.  */
static int
pocl_remote_build_builtin (cl_program program, cl_uint device_i)
{
  struct iovec iov = { program->concated_builtin_names,
                       strlen (program->concated_builtin_names) };
  return build (program, device_i, POCL_REMOTE_BUILD_BUILTIN, "", &iov, 1, 0,
                iov.iov_len, NULL);
}

/* The server device's built-in kernels, as PoCL's own drivers set them up;
   counted as pocl_setup_builtin_kernels_with_version splits the list
   (strtok_r: empty names do not count).  */
void
pocl_remote_setup_builtins (cl_device_id dev)
{
  size_t size = 0;
  unsigned n = 0;
  const char *c;
  dev->builtin_kernel_list = NULL;
  dev->num_builtin_kernels = 0;
  if (pocl_remote_server_info (dev, CL_DEVICE_BUILT_IN_KERNELS, 0, NULL, &size)
          != CL_SUCCESS
      || size == 0)
    return;
  char *list = malloc (size + 1);
  if (list == NULL
      || pocl_remote_server_info (dev, CL_DEVICE_BUILT_IN_KERNELS, size, list,
                                 NULL)
             != CL_SUCCESS)
    {
      free (list);
      return;
    }
  list[size] = 0;
  for (c = list; *c; ++c)
    if (*c != ';' && (c == list || c[-1] == ';'))
      ++n;
  if (n == 0)
    {
      free (list);
      return;
    }
  dev->builtin_kernel_list = list;
  dev->num_builtin_kernels = n;
  pocl_setup_builtin_kernels_with_version (dev);
}

/* PoCL serialises a program from its cache directory, where program.bc is
   the device binary (pocl_binary_serialize); clGetProgramInfo calls this
   first.  Fetches the server's binary, once per build, and stores it there
   under a directory named after its content, so that a binary made from it
   (clCreateProgramWithBinary) unpacks to the same bytes.  No lock is held
   while waiting for the reply: the reader thread may have to take the
   program's lock first, releasing a completed command's kernel.  */
static int
pocl_remote_build_poclbinary (cl_program program, cl_uint device_i)
{
  cl_device_id dev = program->devices[device_i];
  remote_device_data *d = (remote_device_data *)dev->data;
  remote_server *s = pocl_remote_session_for (dev, program->context);
  char bc_path[POCL_FILENAME_LENGTH], tmp_path[POCL_FILENAME_LENGTH];
  pocl_remote_get_program_binary gb;
  void *bin = NULL;
  uint64_t size = 0;
  cl_int err = CL_SUCCESS;

  if (program->pocl_binaries[device_i])
    return CL_SUCCESS;
  if (s == NULL)
    return CL_DEVICE_NOT_AVAILABLE;
  memset (&gb, 0, sizeof (gb));
  gb.prog_id = pocl_remote_wire_id (program->id, dev);
  gb.device = d->server_device;
  err = pocl_remote_request (s, POCL_RMSG_GET_PROGRAM_BINARY, &gb,
                             sizeof (gb), NULL, 0, &bin, &size);
  if (err == CL_SUCCESS && size == 0)
    err = CL_INVALID_BINARY;
  if (err != CL_SUCCESS)
    {
      POCL_MSG_ERR ("remote: no binary of program %" PRIu64
                    " from the server: %d\n",
                    program->id, err);
      free (bin);
      return err;
    }

  POCL_LOCK_OBJ (program);
  if (program->pocl_binaries[device_i] == NULL)
    {
      struct iovec content = { bin, size };
      set_build_hash (program, device_i, &content, 1);
      if (pocl_cache_create_program_cachedir (program, device_i, NULL, 0,
                                              bc_path)
          != 0)
        err = CL_OUT_OF_RESOURCES;
      else if (!pocl_exists (bc_path)
               && (pocl_cache_write_generic_objfile (tmp_path, bin, size) != 0
                   || pocl_rename (tmp_path, bc_path) != 0))
        err = CL_OUT_OF_RESOURCES;
      /* A program built from source or linked has no binary of its own;
         one made from a binary keeps the one it was made from.  */
      else if (program->binaries[device_i] == NULL)
        {
          program->binaries[device_i] = bin;
          program->binary_sizes[device_i] = size;
          bin = NULL;
        }
    }
  POCL_UNLOCK_OBJ (program);
  free (bin);
  if (err != CL_SUCCESS)
    POCL_MSG_ERR ("remote: cannot store the binary of program %" PRIu64
                  " in the kernel cache\n",
                  program->id);
  return err;
}

static int
pocl_remote_link_program (cl_program program, cl_uint device_i,
                          cl_uint num_input_programs,
                          const cl_program *input_programs, int create_library)
{
  cl_device_id dev = program->devices[device_i];
  uint64_t *ids = calloc (num_input_programs, sizeof (uint64_t));
  cl_uint i, j;
  if (ids == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  for (i = 0; i < num_input_programs; ++i)
    {
      cl_program in = input_programs[i];
      ids[i] = pocl_remote_wire_id (in->id, dev);
      /* made from a binary and never built: the server has no program of
         that id yet */
      for (j = 0; j < in->num_devices && in->devices[j] != dev; ++j)
        ;
      if (in->build_status == CL_BUILD_SUCCESS || j == in->num_devices
          || in->binaries[j] == NULL)
        continue;
      struct iovec bin = { in->binaries[j], in->binary_sizes[j] };
      int err = build (in, j, POCL_REMOTE_BUILD_LOAD, "", &bin, 1, 0,
                       bin.iov_len, NULL);
      if (err != CL_SUCCESS)
        {
          free (ids);
          return err;
        }
    }
  struct iovec iov = { ids, num_input_programs * sizeof (uint64_t) };
  /* PoCL took -create-library out of the options */
  int err = build (program, device_i, POCL_REMOTE_BUILD_LINK,
                   create_library ? "-create-library " : "", &iov, 1,
                   num_input_programs, 0, NULL);
  free (ids);
  return err;
}

static int
pocl_remote_free_program (cl_device_id device, cl_program program,
                          unsigned device_i)
{
  remote_server *s = pocl_remote_session_for (device, program->context);
  if (program->data && program->data[device_i])
    {
      remote_program *rp = (remote_program *)program->data[device_i];
      free_meta (rp->meta, rp->num_kernels);
      free (rp->info);
      free (rp);
      program->data[device_i] = NULL;
    }
  pocl_remote_release r = { pocl_remote_wire_id (program->id, device) };
  if (s != NULL)
    pocl_remote_send (s, 0, POCL_RMSG_FREE_PROGRAM, 0, &r, sizeof (r), NULL,
                      0);
  return CL_SUCCESS;
}

/* Raw binaries PoCL accepts for a remote device: SPIR and SPIR-V (also
   what clCreateProgramWithIL asks), when the remote device serves them.
   Binaries the server produced come back as PoCL binaries, which PoCL
   recognises itself.  */
static int
pocl_remote_supports_binary (cl_device_id device, const size_t length,
                             const char *binary)
{
  const unsigned char *b = (const unsigned char *)binary;
  const char *ext = device->extensions ? device->extensions : "";
  if (length < 4)
    return 0;
  /* LLVM bitcode, plain or in its wrapper */
  if ((b[0] == 'B' && b[1] == 'C' && b[2] == 0xC0 && b[3] == 0xDE)
      || (b[0] == 0xDE && b[1] == 0xC0 && b[2] == 0x17 && b[3] == 0x0B))
    return strstr (ext, "cl_khr_spir") != NULL;
  if (b[0] == 0x03 && b[1] == 0x02 && b[2] == 0x23 && b[3] == 0x07)
    return device->supported_spir_v_versions != NULL
           && device->supported_spir_v_versions[0] != 0;
  return 0;
}

/* Hands the metadata of the build reply to PoCL, which owns it from then
   on.  */
static int
pocl_remote_setup_metadata (cl_device_id device, cl_program program,
                            unsigned device_i)
{
  remote_program *rp = (remote_program *)program->data[device_i];
  size_t i;
  if (rp == NULL)
    {
      program->num_kernels = 0;
      program->kernel_meta = NULL;
      return 1;
    }
  for (i = 0; i < rp->num_kernels; ++i)
    rp->meta[i].data = calloc (program->num_devices, sizeof (void *));
  program->num_kernels = rp->num_kernels;
  program->kernel_meta = rp->meta;
  rp->meta = NULL;
  return 1;
}

/* A kernel query as the server's runtime answers it (KERNEL_INFO).  */
static cl_int
ask_kernel (cl_device_id device, cl_kernel kernel, uint32_t kind,
            uint32_t param, size_t input_size, const void *input,
            size_t param_value_size, void *param_value,
            size_t *param_value_size_ret)
{
  remote_device_data *d = (remote_device_data *)device->data;
  remote_server *s
      = pocl_remote_session_for (device, kernel->program->context);
  if (s == NULL)
    return CL_DEVICE_NOT_AVAILABLE;
  if (input_size > POCL_REMOTE_MAX_KINFO_INPUT
      || (input_size > 0 && input == NULL))
    return CL_INVALID_VALUE;
  pocl_remote_kernel_info q;
  memset (&q, 0, sizeof (q));
  q.kernel_id = pocl_remote_wire_id (kernel->id, device);
  q.device = d->server_device;
  q.kind = kind;
  q.param = param;
  q.input_size = (uint32_t)input_size;
  q.value_size = param_value == NULL ? 0
                 : param_value_size > POCL_REMOTE_MAX_KINFO_VALUE
                     ? POCL_REMOTE_MAX_KINFO_VALUE
                     : (uint32_t)param_value_size;
  struct iovec iov = { (void *)input, input_size };
  void *reply = NULL;
  uint64_t size = 0;
  cl_int err = pocl_remote_request (s, POCL_RMSG_KERNEL_INFO, &q, sizeof (q),
                                    &iov, input_size ? 1 : 0, &reply, &size);
  if (err == CL_SUCCESS)
    {
      if (param_value != NULL && param_value_size < size)
        err = CL_INVALID_VALUE;
      else
        {
          if (param_value != NULL)
            memcpy (param_value, reply, size);
          if (param_value_size_ret != NULL)
            *param_value_size_ret = size;
        }
    }
  free (reply);
  return err;
}

/* The device op get_kernel_sub_group_info (patch 0240): the server's
   runtime knows the sub-groups its compiler made.  */
static cl_int
pocl_remote_get_kernel_sub_group_info (
    cl_device_id device, cl_kernel kernel, cl_kernel_sub_group_info param,
    size_t input_value_size, const void *input_value, size_t param_value_size,
    void *param_value, size_t *param_value_size_ret)
{
  /* a device without sub-groups (the server's says so) refuses the core
     queries: cl_intel_required_subgroup_size's own is answered */
  if (device->max_num_sub_groups == 0
      && param != CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL)
    return CL_INVALID_OPERATION;
  return ask_kernel (device, kernel, POCL_REMOTE_KINFO_SUB_GROUP, param,
                     input_value_size, input_value, param_value_size,
                     param_value, param_value_size_ret);
}

/* What the server's compiler decided for the kernel: its work-group size
   limit, preferred multiple and private memory; the local memory is its
   static locals plus the local arguments set so far.  */
static cl_int
pocl_remote_get_kernel_wg_info (cl_device_id device, cl_kernel kernel,
                                cl_kernel_work_group_info param,
                                size_t param_value_size, void *param_value,
                                size_t *param_value_size_ret)
{
  cl_program program = kernel->program;
  unsigned i;
  /* a sub-device's program may have been built for its root device */
  cl_device_id root = device;
  while (root->parent_device != NULL)
    root = root->parent_device;
  for (i = 0; i < program->num_devices && program->devices[i] != device
              && program->devices[i] != root;
       ++i)
    ;
  remote_program *rp = i < program->num_devices && program->data
                           ? (remote_program *)program->data[i]
                           : NULL;
  size_t k = (size_t)(kernel->meta - program->kernel_meta);
  if (rp == NULL || rp->info == NULL || k >= rp->num_kernels)
    return CL_INVALID_VALUE;
  const remote_kernel_info *info = &rp->info[k];
  switch (param)
    {
    case CL_KERNEL_WORK_GROUP_SIZE:
      POCL_RETURN_GETINFO (size_t, (size_t)info->max_wg_size);
    case CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE:
      POCL_RETURN_GETINFO (size_t, (size_t)info->preferred_wg_multiple);
    case CL_KERNEL_PRIVATE_MEM_SIZE:
      POCL_RETURN_GETINFO (cl_ulong, info->private_mem_size);
    case CL_KERNEL_LOCAL_MEM_SIZE:
      {
        cl_ulong local = info->local_mem_size;
        for (i = 0; i < kernel->meta->num_args; ++i)
          if (ARG_IS_LOCAL (kernel->meta->arg_info[i]))
            local += kernel->dyn_arguments[i].size;
        POCL_RETURN_GETINFO (cl_ulong, local);
      }
    case CL_KERNEL_SPILL_MEM_SIZE_INTEL:
      return ask_kernel (device, kernel, POCL_REMOTE_KINFO_WORK_GROUP, param,
                         0, NULL, param_value_size, param_value,
                         param_value_size_ret);
    default:
      return CL_INVALID_VALUE;
    }
}

static int
pocl_remote_new_kernel (cl_device_id device, cl_program program,
                        cl_kernel kernel, unsigned device_i)
{
  remote_device_data *d = (remote_device_data *)device->data;
  remote_server *s = pocl_remote_session_for (device, program->context);
  if (s == NULL)
    return CL_DEVICE_NOT_AVAILABLE;
  pocl_remote_create_kernel ck;
  ck.kernel_id = pocl_remote_wire_id (kernel->id, device);
  ck.prog_id = pocl_remote_wire_id (program->id, device);
  ck.device = d->server_device;
  ck.name_len = (uint32_t)strlen (kernel->name);
  struct iovec iov = { (void *)kernel->name, ck.name_len };
  return pocl_remote_request (s, POCL_RMSG_CREATE_KERNEL, &ck,
                              sizeof (ck), &iov, 1, NULL, NULL);
}

static int
pocl_remote_free_kernel (cl_device_id device, cl_program program,
                         cl_kernel kernel, unsigned device_i)
{
  remote_server *s = pocl_remote_session_for (device, program->context);
  pocl_remote_release r = { pocl_remote_wire_id (kernel->id, device) };
  if (s != NULL)
    pocl_remote_send (s, 0, POCL_RMSG_FREE_KERNEL, 0, &r, sizeof (r), NULL,
                      0);
  return CL_SUCCESS;
}

void
pocl_remote_init_program_ops (struct pocl_device_ops *ops)
{
  ops->build_source = pocl_remote_build_source;
  ops->build_binary = pocl_remote_build_binary;
  ops->build_builtin = pocl_remote_build_builtin;
  ops->build_poclbinary = pocl_remote_build_poclbinary;
  ops->link_program = pocl_remote_link_program;
  ops->free_program = pocl_remote_free_program;
  ops->setup_metadata = pocl_remote_setup_metadata;
  ops->get_kernel_wg_info = pocl_remote_get_kernel_wg_info;
  ops->get_kernel_sub_group_info = pocl_remote_get_kernel_sub_group_info;
  ops->supports_binary = pocl_remote_supports_binary;
  ops->create_kernel = pocl_remote_new_kernel;
  ops->free_kernel = pocl_remote_free_kernel;
}
