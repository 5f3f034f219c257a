/* remote_discovered.c - the devices of the servers that DNS-SD found
   (channel/remote_discovery.c), numbered after the named ones.  The probe
   connects to each found server, so that its handshake decides, with the
   same key and TLS rules as a named server, and its own device count, not
   the advertisement's, says how many devices it adds; init then takes
   their addresses from here as if the user had named them.  */

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "remote.h"
#include "remote_params.h"
#include "pocl_timing.h"

/* Connecting to the servers found stops after this long: anyone on the
   link can advertise, and a server that accepts but never answers holds
   each handshake for its full timeout (connect 5 s, HELLO 10 s).  */
#define DISCOVERED_CONNECT_BUDGET_MS 15000

/* "[address]:port/index" of each discovered device */
static char discovered[POCL_REMOTE_MAX_DEVICES][80];
static unsigned num_named, num_discovered;

/* Whether a named server's host stands for the numeric address found.  */
static int
same_host (const char *named, const char *found)
{
  struct addrinfo hints, *res = NULL, *a;
  char buf[NI_MAXHOST];
  int same = strcmp (named, found) == 0;
  memset (&hints, 0, sizeof (hints));
  hints.ai_socktype = SOCK_STREAM;
  if (same || getaddrinfo (named, NULL, &hints, &res) != 0)
    return same;
  for (a = res; a != NULL && !same; a = a->ai_next)
    same = getnameinfo (a->ai_addr, a->ai_addrlen, buf, sizeof (buf), NULL, 0,
                        NI_NUMERICHOST)
               == 0
           && strcmp (buf, found) == 0;
  freeaddrinfo (res);
  return same;
}

static int
is_named (const pocl_remote_found *f)
{
  char env[64];
  unsigned j;
  pocl_remote_params pp;
  for (j = 0; j < num_named; ++j)
    {
      snprintf (env, sizeof (env), "POCL_REMOTE%u_PARAMETERS", j);
      if (pocl_remote_parse_parameters (getenv (env), &pp) == NULL
          && pp.port == f->port && same_host (pp.host, f->host))
        return 1;
    }
  return 0;
}

unsigned
pocl_remote_discovered_probe (unsigned named)
{
  pocl_remote_found found[POCL_REMOTE_DISCOVERY_MAX];
  unsigned n, i, d;
  uint64_t start;
  cl_int err;
  num_named = named;
  num_discovered = 0;
  n = pocl_remote_discover (found, POCL_REMOTE_DISCOVERY_MAX);
  start = pocl_gettimemono_ns ();
  for (i = 0; i < n; ++i)
    {
      const pocl_remote_found *f = &found[i];
      remote_server *s;
      if (pocl_gettimemono_ns () - start
          > DISCOVERED_CONNECT_BUDGET_MS * 1000000ull)
        {
          fprintf (stderr,
                   "pocl-remote: connecting to the discovered servers took "
                   "over %d ms; %u of them are not tried\n",
                   DISCOVERED_CONNECT_BUDGET_MS, n - i);
          break;
        }
      if (is_named (f))
        {
          POCL_MSG_PRINT_INFO ("remote: found '%s' at %s:%u, named already\n",
                               f->name, f->host, f->port);
          continue;
        }
      s = pocl_remote_server_get (f->host, f->port, NULL, 0, &err);
      if (s == NULL || err != CL_SUCCESS)
        {
          fprintf (stderr,
                   "pocl-remote: discovered server '%s' at %s:%u refused "
                   "(no connection, or its key, TLS or protocol version "
                   "differs); its devices are not added\n",
                   f->name, f->host, f->port);
          continue;
        }
      for (d = 0; d < s->num_devices
                  && named + num_discovered < POCL_REMOTE_MAX_DEVICES;
           ++d)
        snprintf (discovered[num_discovered++], sizeof (discovered[0]),
                  strchr (f->host, ':') ? "[%s]:%u/%u" : "%s:%u/%u", f->host,
                  f->port, d);
      POCL_MSG_PRINT_INFO ("remote: discovered server '%s' at %s:%u: %u "
                           "devices\n",
                           f->name, f->host, f->port, s->num_devices);
    }
  return num_discovered;
}

const char *
pocl_remote_discovered_params (unsigned j)
{
  if (j < num_named || j - num_named >= num_discovered)
    return NULL;
  return discovered[j - num_named];
}
