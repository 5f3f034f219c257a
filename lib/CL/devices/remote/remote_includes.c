/* remote_includes.c - the files a program's source includes from the
   client's own directories travel with its build, since the server
   compiles on its own filesystem.  A local PoCL build searches the working
   directory (its -I.) and then each -I of the options; the same search
   here finds the files that the source and those files include (quoted
   includes also next to the including file), and BUILD_PROGRAM carries
   them as "k/path" (protocol/wire/pocl_remote_protocol.h), and the server puts
   its copies first in the search.  The options stay as they are: what is
   not found here (an include named by a macro, which is not followed, or a
   path that leaves its directory) may still be where the server looks.  */

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "remote.h"
#include "pocl_file_util.h"

#define MAX_DIRS 64
#define MAX_TOTAL (64u << 20)

typedef struct includes
{
  const char *dirs[MAX_DIRS]; /* dirs[0] is "." */
  unsigned num_dirs;
  char *packed; /* (uint32 name_len, uint32 size, name, bytes) each */
  size_t len, cap;
  uint32_t count;
  int failed;
} includes;

static int
is_dir (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISDIR (st.st_mode);
}

static int
append (includes *inc, const void *p, size_t n)
{
  if (inc->len + n > inc->cap)
    {
      size_t cap = (inc->len + n) * 2;
      char *grown = realloc (inc->packed, cap);
      if (grown == NULL)
        return -1;
      inc->packed = grown;
      inc->cap = cap;
    }
  memcpy (inc->packed + inc->len, p, n);
  inc->len += n;
  return 0;
}

/* Whether "k/rel" is packed already.  */
static int
packed_already (const includes *inc, const char *name)
{
  size_t pos = 0, n = strlen (name);
  while (pos < inc->len)
    {
      uint32_t lens[2];
      memcpy (lens, inc->packed + pos, 8);
      if (lens[0] == n && memcmp (inc->packed + pos + 8, name, n) == 0)
        return 1;
      pos += 8 + (size_t)lens[0] + lens[1];
    }
  return 0;
}

/* rel without "." and empty components, ".." applied, into out: what the
   server accepts.  0 when rel is absolute or leaves its directory.  */
static int
normalize (const char *rel, char *out, size_t out_size)
{
  const char *p = rel;
  size_t len = 0;
  if (*p == '/' || strlen (rel) >= out_size)
    return 0;
  while (*p)
    {
      const char *e = strchr (p, '/');
      size_t n = e ? (size_t)(e - p) : strlen (p);
      if (n == 2 && p[0] == '.' && p[1] == '.')
        {
          if (len == 0)
            return 0;
          while (len > 0 && out[len - 1] != '/')
            --len;
          if (len > 0)
            --len;
        }
      else if (n > 0 && !(n == 1 && p[0] == '.'))
        {
          if (len > 0)
            out[len++] = '/';
          memcpy (out + len, p, n);
          len += n;
        }
      p += n + (e != NULL);
    }
  out[len] = 0;
  return len > 0;
}

static void scan (includes *inc, const char *text, size_t len, int k,
                  const char *rel);

/* Packs dirs[k]/rel if it is a file, and what it includes.  1 if found.  */
static int
take (includes *inc, unsigned k, const char *what)
{
  char path[POCL_FILENAME_LENGTH], name[POCL_FILENAME_LENGTH];
  char rel[POCL_FILENAME_LENGTH];
  if (!normalize (what, rel, sizeof (rel))
      || (size_t)snprintf (path, sizeof (path), "%s/%s", inc->dirs[k], rel)
             >= sizeof (path)
      || (size_t)snprintf (name, sizeof (name), "%u/%s", k, rel)
             >= sizeof (name))
    return 0;
  struct stat st;
  if (stat (path, &st) != 0 || !S_ISREG (st.st_mode))
    return 0;
  if (packed_already (inc, name))
    return 1;
  char *content = NULL;
  uint64_t size = 0;
  if (pocl_read_file (path, &content, &size) != 0
      || inc->len + size > MAX_TOTAL || inc->count >= POCL_REMOTE_MAX_FILES)
    {
      POCL_MSG_ERR ("remote: cannot send included file %s\n", path);
      inc->failed = 1;
      free (content);
      return 1;
    }
  uint32_t lens[2] = { (uint32_t)strlen (name), (uint32_t)size };
  if (append (inc, lens, 8) || append (inc, name, lens[0])
      || append (inc, content, size))
    inc->failed = 1;
  else
    ++inc->count;
  scan (inc, content, size, (int)k, rel);
  free (content);
  return 1;
}

/* An include of `what` from the file k/rel (k < 0: the program's source):
   next to the including file when quoted, then in each directory.  */
static void
resolve (includes *inc, const char *what, int quoted, int k, const char *rel)
{
  unsigned i;
  if (quoted && k >= 0)
    {
      char sibling[POCL_FILENAME_LENGTH];
      const char *slash = strrchr (rel, '/');
      int dir_len = slash ? (int)(slash - rel) + 1 : 0;
      if ((size_t)snprintf (sibling, sizeof (sibling), "%.*s%s", dir_len, rel,
                            what)
              < sizeof (sibling)
          && take (inc, (unsigned)k, sibling))
        return;
    }
  for (i = 0; i < inc->num_dirs; ++i)
    if (take (inc, i, what))
      return;
}

/* Every #include "x" or <x> line of text.  */
static void
scan (includes *inc, const char *text, size_t len, int k, const char *rel)
{
  const char *p = text, *end = text + len;
  while (p < end && !inc->failed)
    {
      const char *eol = memchr (p, '\n', (size_t)(end - p));
      const char *q = p;
      if (eol == NULL)
        eol = end;
      while (q < eol && (*q == ' ' || *q == '\t'))
        ++q;
      if (q < eol && *q == '#')
        {
          ++q;
          while (q < eol && (*q == ' ' || *q == '\t'))
            ++q;
          if (eol - q > 7 && strncmp (q, "include", 7) == 0)
            {
              q += 7;
              while (q < eol && (*q == ' ' || *q == '\t'))
                ++q;
              char close = q < eol && *q == '"' ? '"' : '>';
              const char *e = q < eol && (*q == '"' || *q == '<')
                                  ? memchr (q + 1, close, (size_t)(eol - q - 1))
                                  : NULL;
              if (e != NULL && e - q - 1 > 0
                  && e - q - 1 < POCL_FILENAME_LENGTH)
                {
                  char what[POCL_FILENAME_LENGTH];
                  memcpy (what, q + 1, (size_t)(e - q - 1));
                  what[e - q - 1] = 0;
                  resolve (inc, what, close == '"', k, rel);
                }
            }
        }
      p = eol + 1;
    }
}

int
pocl_remote_pack_includes (const char *source, const char *options,
                           char **packed, size_t *packed_len,
                           uint32_t *count)
{
  includes inc;
  memset (&inc, 0, sizeof (inc));
  char *copy = strdup (options);
  if (copy == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  inc.dirs[inc.num_dirs++] = ".";
  /* -I dir and -Idir of directories that exist here */
  char *save = NULL, *tok;
  for (tok = strtok_r (copy, " ", &save); tok;
       tok = strtok_r (NULL, " ", &save))
    {
      char *dir = NULL;
      if (strcmp (tok, "-I") == 0)
        dir = strtok_r (NULL, " ", &save);
      else if (strncmp (tok, "-I", 2) == 0)
        dir = tok + 2;
      if (dir != NULL && inc.num_dirs < MAX_DIRS && is_dir (dir))
        inc.dirs[inc.num_dirs++] = dir;
    }
  scan (&inc, source, strlen (source), -1, "");
  free (copy);
  if (inc.failed)
    {
      free (inc.packed);
      return CL_OUT_OF_RESOURCES;
    }
  *packed = inc.packed;
  *packed_len = inc.len;
  *count = inc.count;
  return CL_SUCCESS;
}
