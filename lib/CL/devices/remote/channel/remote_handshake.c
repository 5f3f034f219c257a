/* remote_handshake.c - the start of every link to pocld (a session's
   command and data links, a resume's, each lane): HELLO, the pre-shared
   key's proofs both ways, HELLO_REPLY (doc/protocol.md, doc/security.md).  */

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "pocl_debug.h"
#include "pocl_remote_auth.h"
#include "pocl_timing.h"
#include "remote_channel_private.h"

/* The pre-shared key, from POCL_REMOTE_PSK or the file named by
   POCL_REMOTE_PSK_FILE, into key (POCL_REMOTE_MAX_KEY bytes): its length, 0
   without one, -1 for a bad one (logged).  */
long
pocl_remote_client_key (char *key)
{
  const char *file = getenv ("POCL_REMOTE_PSK_FILE");
  const char *text = getenv ("POCL_REMOTE_PSK");
  long n;
  if (file == NULL && text == NULL)
    return 0;
  if (!pocl_remote_auth_available ())
    {
      POCL_MSG_ERR ("remote: a pre-shared key needs OpenSSL, which this "
                    "driver was built without\n");
      return -1;
    }
  if (file != NULL)
    {
      int loose = 0;
      n = pocl_remote_key_file (file, key, &loose);
      if (n < 0)
        {
          POCL_MSG_ERR ("remote: cannot read the key file %s: %s\n", file,
                        strerror (errno));
          return -1;
        }
    }
  else
    {
      n = (long)pocl_remote_key_trim (text, strlen (text));
      memcpy (key, text, (size_t)n);
    }
  if (n == 0)
    POCL_MSG_ERR ("remote: the pre-shared key must have %u to %u bytes\n",
                  POCL_REMOTE_MIN_KEY, POCL_REMOTE_MAX_KEY);
  return n > 0 ? n : -1;
}

/* The handshake on l (HELLO, AUTH_CHALLENGE, AUTH, HELLO_REPLY), each wait
   bounded.  With a key (key_len > 0) the server must prove it; without one,
   a server that requires one is refused.  */
cl_int
pocl_remote_handshake (remote_server *s, pocl_remote_link *l, uint32_t role,
                       uint32_t lane, const uint8_t *session_id,
                       const uint64_t *seen, const char *key, size_t key_len,
                       pocl_remote_hello_reply *out, uint64_t *t0,
                       uint64_t *t1)
{
  pocl_remote_hdr h;
  pocl_remote_hello hello;
  pocl_remote_auth_challenge ch;
  pocl_remote_auth auth;
  memset (&hello, 0, sizeof (hello));
  memset (&auth, 0, sizeof (auth));
  hello.magic = POCL_REMOTE_MAGIC;
  hello.version = POCL_REMOTE_PROTOCOL_VERSION;
  hello.role = role;
  hello.peer_index = lane;
  if (session_id)
    memcpy (hello.session_id, session_id, 16);
  if (seen)
    memcpy (hello.seen, seen, sizeof (hello.seen));
  if (getrandom (hello.nonce, sizeof (hello.nonce), 0)
      != (ssize_t)sizeof (hello.nonce))
    return CL_OUT_OF_HOST_MEMORY;

  h.type = POCL_RMSG_HELLO;
  h.body_size = sizeof (hello);
  h.payload_size = 0;
  h.id = 0;
  struct iovec iov[2] = { { &h, sizeof (h) }, { &hello, sizeof (hello) } };

  pocl_remote_link_set_timeout (l, 10000);
  hello.client_time_ns = pocl_gettimemono_ns ();
  if (pocl_remote_link_send (l, iov, 2)
      || pocl_remote_link_recv_full (l, &h, sizeof (h)))
    return CL_DEVICE_NOT_AVAILABLE;
  /* a refusal (version, session limit) comes at once as HELLO_REPLY */
  if (h.type == POCL_RMSG_HELLO_REPLY && h.body_size == sizeof (*out)
      && h.payload_size == 0
      && pocl_remote_link_recv_full (l, out, sizeof (*out)) == 0)
    return out->status != CL_SUCCESS ? out->status : CL_DEVICE_NOT_AVAILABLE;
  if (h.type != POCL_RMSG_AUTH_CHALLENGE || h.body_size != sizeof (ch)
      || h.payload_size != 0
      || pocl_remote_link_recv_full (l, &ch, sizeof (ch)))
    return CL_DEVICE_NOT_AVAILABLE;
  h.type = POCL_RMSG_AUTH;
  h.body_size = sizeof (auth);
  iov[0].iov_base = &h; /* send may have advanced the entries */
  iov[0].iov_len = sizeof (h);
  iov[1].iov_base = &auth;
  iov[1].iov_len = sizeof (auth);
  if (key_len > 0)
    {
      uint8_t want[POCL_REMOTE_MAC_SIZE];
      if (pocl_remote_auth_proof (key, key_len, 0, &hello, ch.nonce,
                                  auth.proof))
        return CL_DEVICE_NOT_AVAILABLE;
      if (!(ch.flags & POCL_REMOTE_AUTH_REQUIRED)
          || pocl_remote_auth_proof (key, key_len, 1, &hello, ch.nonce, want)
          || !pocl_remote_auth_equal (want, ch.proof))
        {
          /* Our proof still goes out: a server with another key then logs
             the mismatch too.  It reveals nothing about the key.  */
          pocl_remote_link_send (l, iov, 2);
          POCL_MSG_ERR ("remote: pocld at %s:%u does not prove our "
                        "pre-shared key (it has another one, or none): not "
                        "using it\n",
                        s->host, s->port);
          return CL_DEVICE_NOT_AVAILABLE;
        }
    }
  else if (ch.flags & POCL_REMOTE_AUTH_REQUIRED)
    {
      pocl_remote_link_send (l, iov, 2); /* so that the server logs why */
      POCL_MSG_ERR ("remote: pocld at %s:%u requires a pre-shared key "
                    "(POCL_REMOTE_PSK or POCL_REMOTE_PSK_FILE)\n",
                    s->host, s->port);
      return CL_DEVICE_NOT_AVAILABLE;
    }
  iov[1].iov_base = &auth;
  iov[1].iov_len = sizeof (auth);
  /* the clock offset is estimated around this last round trip */
  *t0 = pocl_gettimemono_ns ();
  if (pocl_remote_link_send (l, iov, 2)
      || pocl_remote_link_recv_full (l, &h, sizeof (h)))
    {
      if (key_len > 0)
        POCL_MSG_ERR ("remote: pocld at %s:%u refused our pre-shared key\n",
                      s->host, s->port);
      return CL_DEVICE_NOT_AVAILABLE;
    }
  if (h.type != POCL_RMSG_HELLO_REPLY || h.body_size != sizeof (*out)
      || h.payload_size != 0
      || pocl_remote_link_recv_full (l, out, sizeof (*out)))
    return CL_DEVICE_NOT_AVAILABLE;
  *t1 = pocl_gettimemono_ns ();
  pocl_remote_link_set_timeout (l, 0);
  if (out->magic != POCL_REMOTE_MAGIC
      || out->version != POCL_REMOTE_PROTOCOL_VERSION)
    {
      POCL_MSG_ERR ("remote: server speaks protocol version %u, we %u\n",
                    out->version, POCL_REMOTE_PROTOCOL_VERSION);
      return CL_DEVICE_NOT_AVAILABLE;
    }
  if (out->status != CL_SUCCESS && key_len > 0)
    POCL_MSG_ERR ("remote: pocld at %s:%u refused our pre-shared key\n",
                  s->host, s->port);
  return out->status;
}
