/* remote_params.c - a remote device's address as the user typed it in
   POCL_REMOTE<n>_PARAMETERS: host[:port]/device_index[#peer_host[:peer_port]].
   Self-contained (tests/remote/fuzz/fuzz_params.c fuzzes it): any string is
   either taken whole or refused with the reason.  */

#include <stdint.h>
#include <string.h>

#include "pocl_remote_protocol.h"
#include "remote_params.h"

/* Decimal digits only (strtoul would take signs, blanks and overflow);
   returns -1 unless [p, end) is 1-10 digits of a value <= max.  */
static int
parse_number (const char *p, const char *end, uint32_t max, uint32_t *out)
{
  uint64_t v = 0;
  if (p == end || end - p > 10)
    return -1;
  for (; p < end; ++p)
    {
      if (*p < '0' || *p > '9')
        return -1;
      v = v * 10 + (uint64_t)(*p - '0');
    }
  if (v > max)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

/* host[:port] in [p, end); IPv6 literals in brackets.  */
static const char *
parse_host_port (const char *p, const char *end, char *host, uint16_t *port,
                 uint16_t def_port)
{
  const char *h = p, *h_end = end, *colon = NULL;
  uint32_t v;
  if (p < end && p[0] == '[')
    {
      const char *rb = memchr (p, ']', (size_t)(end - p));
      if (rb == NULL)
        return "an IPv6 address without its closing ']'";
      h = p + 1;
      h_end = rb;
      if (rb + 1 < end)
        {
          if (rb[1] != ':')
            return "text after the IPv6 address's ']' that is not :port";
          colon = rb + 1;
        }
    }
  else
    {
      const char *c = memchr (p, ':', (size_t)(end - p));
      /* a bare IPv6 address has several colons and no port */
      if (c != NULL && memchr (c + 1, ':', (size_t)(end - c - 1)) == NULL)
        {
          colon = c;
          h_end = c;
        }
    }
  if (h_end == h)
    return "no host";
  if ((size_t)(h_end - h) >= POCL_REMOTE_HOST_MAX)
    return "a host name longer than 255 characters";
  if (memchr (h, ' ', (size_t)(h_end - h)) != NULL)
    return "a blank in the host name";
  if (memchr (h, '[', (size_t)(h_end - h)) != NULL
      || memchr (h, ']', (size_t)(h_end - h)) != NULL)
    return "a '[' or ']' that does not enclose an IPv6 address";
  memcpy (host, h, (size_t)(h_end - h));
  host[h_end - h] = 0;
  *port = def_port;
  if (colon != NULL)
    {
      /* the port, its data socket and the peer port must all exist */
      if (parse_number (colon + 1, end, 65533, &v) || v == 0)
        return "a port that is not a number from 1 to 65533";
      *port = (uint16_t)v;
    }
  return NULL;
}

const char *
pocl_remote_parse_parameters (const char *params, pocl_remote_params *out)
{
  const char *hash, *end_hp, *slash = NULL, *c, *idx_end, *why;
  memset (out, 0, sizeof (*out));
  if (params == NULL)
    return "it is not set";
  if (params[0] == 0)
    return "it is empty";
  hash = strchr (params, '#');
  end_hp = hash ? hash : params + strlen (params);
  for (c = params; c < end_hp; ++c)
    if (*c == '/')
      slash = c;
  if (slash == NULL)
    return "no '/device_index' after the host";
  idx_end = end_hp;
  if (parse_number (slash + 1, idx_end, POCL_REMOTE_MAX_DEVICES - 1,
                    &out->device))
    return "a device index that is not a number from 0 to 255";
  why = parse_host_port (params, slash, out->host, &out->port,
                         POCL_REMOTE_DEFAULT_PORT);
  if (why != NULL)
    return why;
  if (hash != NULL)
    {
      why = parse_host_port (
          hash + 1, hash + strlen (hash), out->peer_host, &out->peer_port,
          (uint16_t)(out->port + POCL_REMOTE_PEER_PORT_OFFSET));
      if (why != NULL)
        return why;
    }
  return NULL;
}
