/* pocl_remote_auth.h - the pre-shared-key proofs of the PoCL-R handshake
   (doc/protocol.md, doc/security.md), one definition for the client driver
   (C) and pocld (C++).  HMAC-SHA256 from OpenSSL's libcrypto, when the build
   found it (POCL_REMOTE_HAVE_OPENSSL); without it a key cannot be used.  */

#ifndef POCL_REMOTE_AUTH_H
#define POCL_REMOTE_AUTH_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pocl_remote_protocol.h"

#ifdef POCL_REMOTE_HAVE_OPENSSL
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Keys are the bytes of a file or an environment variable, trailing white
   space removed: at least POCL_REMOTE_MIN_KEY bytes (16 random bytes, or a
   32-character hex string from `openssl rand -hex 32`).  */
#define POCL_REMOTE_MIN_KEY 16u
#define POCL_REMOTE_MAX_KEY 1024u

static inline int
pocl_remote_auth_available (void)
{
#ifdef POCL_REMOTE_HAVE_OPENSSL
  return 1;
#else
  return 0;
#endif
}

/* A key from `text` (n bytes): trailing white space dropped, the length
   checked.  Returns its length, or 0 when it is too short or too long.  */
static inline size_t
pocl_remote_key_trim (const char *text, size_t n)
{
  while (n > 0
         && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '
             || text[n - 1] == '\t'))
    --n;
  return n >= POCL_REMOTE_MIN_KEY && n <= POCL_REMOTE_MAX_KEY ? n : 0;
}

/* Reads a key file into key (POCL_REMOTE_MAX_KEY bytes).  Returns the key's
   length, 0 for a key of a bad length, -1 (errno set) when unreadable.
   *group_or_other_readable: the file's mode lets others read it.  */
static inline long
pocl_remote_key_file (const char *path, char *key,
                      int *group_or_other_readable)
{
  char buf[POCL_REMOTE_MAX_KEY + 2];
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st;
  *group_or_other_readable = fstat (fd, &st) == 0 && (st.st_mode & 077);
  size_t n = 0;
  ssize_t r;
  while (n < sizeof (buf)
         && ((r = read (fd, buf + n, sizeof (buf) - n)) > 0
             || (r < 0 && errno == EINTR)))
    if (r > 0)
      n += (size_t)r;
  close (fd);
  n = pocl_remote_key_trim (buf, n);
  memcpy (key, buf, n);
  memset (buf, 0, sizeof (buf));
  return (long)n;
}

/* The proof that a party knows the key: HMAC-SHA256 over a label saying
   which side proves (so that one side's proof is never the other's), the
   whole HELLO (role, session, peer index, the client's nonce) and the
   server's nonce.  0 on success.  */
static inline int
pocl_remote_auth_proof (const char *key, size_t key_len, int server_side,
                        const pocl_remote_hello *hello,
                        const uint8_t server_nonce[POCL_REMOTE_NONCE_SIZE],
                        uint8_t out[POCL_REMOTE_MAC_SIZE])
{
#ifdef POCL_REMOTE_HAVE_OPENSSL
  uint8_t msg[16 + sizeof (pocl_remote_hello) + POCL_REMOTE_NONCE_SIZE];
  memcpy (msg, server_side ? "PoCL-R v3 server" : "PoCL-R v3 client", 16);
  memcpy (msg + 16, hello, sizeof (*hello));
  memcpy (msg + 16 + sizeof (*hello), server_nonce, POCL_REMOTE_NONCE_SIZE);
  unsigned len = 0;
  if (HMAC (EVP_sha256 (), key, (int)key_len, msg, sizeof (msg), out, &len)
          == NULL
      || len != POCL_REMOTE_MAC_SIZE)
    return -1;
  return 0;
#else
  (void)key;
  (void)key_len;
  (void)server_side;
  (void)hello;
  (void)server_nonce;
  memset (out, 0, POCL_REMOTE_MAC_SIZE);
  return -1;
#endif
}

/* The route of a session (STARTTLS): the first 16 bytes of SHA-256 over a
   label and the session id.  It names the session to the listener in the
   clear without revealing the id.  0 on success.  */
static inline int
pocl_remote_route (const uint8_t session_id[16],
                   uint8_t out[POCL_REMOTE_ROUTE_SIZE])
{
#ifdef POCL_REMOTE_HAVE_OPENSSL
  uint8_t msg[16 + 16], md[32];
  unsigned len = 0;
  memcpy (msg, "PoCL-R v5 route:", 16);
  memcpy (msg + 16, session_id, 16);
  if (EVP_Digest (msg, sizeof (msg), md, &len, EVP_sha256 (), NULL) != 1
      || len != sizeof (md))
    return -1;
  memcpy (out, md, POCL_REMOTE_ROUTE_SIZE);
  return 0;
#else
  (void)session_id;
  memset (out, 0, POCL_REMOTE_ROUTE_SIZE);
  return -1;
#endif
}

/* Compares two proofs in constant time: 1 when equal.  */
static inline int
pocl_remote_auth_equal (const uint8_t *a, const uint8_t *b)
{
#ifdef POCL_REMOTE_HAVE_OPENSSL
  return CRYPTO_memcmp (a, b, POCL_REMOTE_MAC_SIZE) == 0;
#else
  unsigned char d = 0;
  unsigned i;
  for (i = 0; i < POCL_REMOTE_MAC_SIZE; ++i)
    d |= a[i] ^ b[i];
  return d == 0;
#endif
}

#ifdef __cplusplus
}
#endif

#endif
