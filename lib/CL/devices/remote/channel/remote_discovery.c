/* remote_discovery.c - servers found through DNS-SD (mDNS, Avahi) at
   platform initialisation, when POCL_REMOTE_DISCOVERY=avahi asks for them:
   a browse for POCL_REMOTE_DNSSD_TYPE bounded by POCL_REMOTE_DISCOVERY_MS,
   each service resolved to an address and port.  What the network says is
   a hint: names are cleaned for messages, TXT records are only logged, and
   the driver adds a server's devices only after its handshake, with the
   same key and TLS rules as a named server.  */

#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote_channel_private.h"
#include "pocl_timing.h"

#ifdef POCL_REMOTE_HAVE_AVAHI
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/simple-watch.h>
#endif

/* Long enough for a daemon's cache and a round of mDNS queries, short
   enough for every clGetPlatformIDs of an application that asks.  */
#define DISCOVERY_DEFAULT_MS 1500
#define DISCOVERY_MAX_MS 60000

/* 1-5 decimal digits of a value in [1, DISCOVERY_MAX_MS], else -1.  */
static long
parse_ms (const char *v)
{
  long n = 0;
  size_t i, len = strlen (v);
  if (len == 0 || len > 5)
    return -1;
  for (i = 0; i < len; ++i)
    {
      if (v[i] < '0' || v[i] > '9')
        return -1;
      n = n * 10 + (v[i] - '0');
    }
  return n >= 1 && n <= DISCOVERY_MAX_MS ? n : -1;
}

/* The browse time asked for, or -1 when discovery is not asked for or
   refused (said on stderr: a mistake in the settings).  */
static long
discovery_ms (void)
{
  const char *mode = getenv ("POCL_REMOTE_DISCOVERY");
  const char *ms = getenv ("POCL_REMOTE_DISCOVERY_MS");
  long n = DISCOVERY_DEFAULT_MS;
  if (mode == NULL || mode[0] == 0 || strcmp (mode, "off") == 0)
    return -1;
  if (strcmp (mode, "avahi") != 0)
    {
      fprintf (stderr,
               "pocl-remote: POCL_REMOTE_DISCOVERY='%.64s': not 'avahi' or "
               "'off'; no servers are discovered\n",
               mode);
      return -1;
    }
  if (ms != NULL && (n = parse_ms (ms)) < 0)
    {
      fprintf (stderr,
               "pocl-remote: POCL_REMOTE_DISCOVERY_MS='%.64s': not a number "
               "of milliseconds from 1 to %d; browsing for %d\n",
               ms, DISCOVERY_MAX_MS, DISCOVERY_DEFAULT_MS);
      n = DISCOVERY_DEFAULT_MS;
    }
  return n;
}

#ifdef POCL_REMOTE_HAVE_AVAHI

typedef struct browse_state
{
  AvahiSimplePoll *poll;
  AvahiClient *client;
  pocl_remote_found *out;
  unsigned max, n;
  /* resolvers started (bounded: a flood of services costs nothing more)
     and still running */
  unsigned started, running;
  int all_for_now, failed;
} browse_state;

/* A service name from the network into dst for messages: printable ASCII
   only, cut to fit.  */
static void
clean_name (char *dst, size_t size, const char *src)
{
  size_t i;
  for (i = 0; src[i] != 0 && i + 1 < size; ++i)
    dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
  dst[i] = 0;
}

static void
resolve_cb (AvahiServiceResolver *r, AvahiIfIndex iface, AvahiProtocol proto,
            AvahiResolverEvent event, const char *name, const char *type,
            const char *domain, const char *host_name,
            const AvahiAddress *address, uint16_t port, AvahiStringList *txt,
            AvahiLookupResultFlags flags, void *userdata)
{
  browse_state *st = userdata;
  char host[64], clean[64], ifname[IF_NAMESIZE];
  unsigned i;
  --st->running;
  if (event != AVAHI_RESOLVER_FOUND || address == NULL || port == 0
      || st->n >= st->max)
    goto done;
  clean_name (clean, sizeof (clean), name ? name : "");
  if (avahi_address_snprint (host, sizeof (host), address) == NULL)
    goto done;
  /* a link-local IPv6 address is reachable only through its interface */
  if (address->proto == AVAHI_PROTO_INET6 && strncmp (host, "fe80:", 5) == 0
      && iface >= 0 && if_indextoname ((unsigned)iface, ifname) != NULL
      && strlen (host) + strlen (ifname) + 2 <= sizeof (host))
    {
      strcat (host, "%");
      strcat (host, ifname);
    }
  /* one entry per server: a service is seen once per interface and
     address family */
  for (i = 0; i < st->n; ++i)
    if (strcmp (st->out[i].name, clean) == 0
        || (st->out[i].port == port && strcmp (st->out[i].host, host) == 0))
      goto done;
  {
    char *t = avahi_string_list_to_string (txt);
    POCL_MSG_PRINT_INFO ("remote: found '%s' at %s:%u, TXT %.200s\n", clean,
                         host, port, t ? t : "");
    avahi_free (t);
  }
  memcpy (st->out[st->n].host, host, sizeof (host));
  st->out[st->n].port = port;
  memcpy (st->out[st->n].name, clean, sizeof (clean));
  ++st->n;
done:
  avahi_service_resolver_free (r);
}

static void
browse_cb (AvahiServiceBrowser *b, AvahiIfIndex iface, AvahiProtocol proto,
           AvahiBrowserEvent event, const char *name, const char *type,
           const char *domain, AvahiLookupResultFlags flags, void *userdata)
{
  browse_state *st = userdata;
  switch (event)
    {
    case AVAHI_BROWSER_NEW:
      if (st->started >= 4 * st->max)
        return;
      if (avahi_service_resolver_new (st->client, iface, proto, name, type,
                                      domain, AVAHI_PROTO_UNSPEC, 0,
                                      resolve_cb, st)
          != NULL)
        {
          ++st->started;
          ++st->running;
        }
      return;
    case AVAHI_BROWSER_ALL_FOR_NOW:
      st->all_for_now = 1;
      return;
    case AVAHI_BROWSER_FAILURE:
      fprintf (stderr, "pocl-remote: DNS-SD browse failed: %s\n",
               avahi_strerror (avahi_client_errno (st->client)));
      st->failed = 1;
      return;
    default:
      return;
    }
}

static void
client_cb (AvahiClient *c, AvahiClientState state, void *userdata)
{
  browse_state *st = userdata;
  if (state == AVAHI_CLIENT_FAILURE)
    st->failed = 1;
}

unsigned
pocl_remote_discover (pocl_remote_found *out, unsigned max)
{
  browse_state st;
  AvahiServiceBrowser *b;
  int error = 0;
  long ms = discovery_ms ();
  uint64_t start, deadline;
  if (ms < 0 || max == 0)
    return 0;
  memset (&st, 0, sizeof (st));
  st.out = out;
  st.max = max;
  st.poll = avahi_simple_poll_new ();
  if (st.poll == NULL)
    return 0;
  st.client = avahi_client_new (avahi_simple_poll_get (st.poll), 0, client_cb,
                                &st, &error);
  if (st.client == NULL)
    {
      fprintf (stderr,
               "pocl-remote: POCL_REMOTE_DISCOVERY=avahi: no avahi-daemon "
               "(%s); only the named servers are used\n",
               avahi_strerror (error));
      avahi_simple_poll_free (st.poll);
      return 0;
    }
  b = avahi_service_browser_new (st.client, AVAHI_IF_UNSPEC,
                                 AVAHI_PROTO_UNSPEC, POCL_REMOTE_DNSSD_TYPE,
                                 NULL, 0, browse_cb, &st);
  if (b == NULL)
    fprintf (stderr, "pocl-remote: DNS-SD browse failed: %s\n",
             avahi_strerror (avahi_client_errno (st.client)));
  start = pocl_gettimemono_ns ();
  deadline = start + (uint64_t)ms * 1000000;
  /* until the daemon has said all it knows and every resolver answered,
     or the time is up */
  while (b != NULL && !st.failed && !(st.all_for_now && st.running == 0))
    {
      uint64_t now = pocl_gettimemono_ns ();
      long left = now < deadline ? (long)((deadline - now) / 1000000) : 0;
      if (left <= 0 || avahi_simple_poll_iterate (st.poll, (int)left) != 0)
        break;
    }
  POCL_MSG_PRINT_INFO ("remote: DNS-SD found %u servers in %ld ms\n", st.n,
                       (long)((pocl_gettimemono_ns () - start) / 1000000));
  /* frees the browser and any resolver still running */
  avahi_client_free (st.client);
  avahi_simple_poll_free (st.poll);
  return st.n;
}

#else

unsigned
pocl_remote_discover (pocl_remote_found *out, unsigned max)
{
  (void)out;
  (void)max;
  if (discovery_ms () < 0)
    return 0;
  fprintf (stderr, "pocl-remote: POCL_REMOTE_DISCOVERY=avahi: this PoCL was "
                   "built without Avahi (libavahi-client-dev); only the "
                   "named servers are used\n");
  return 0;
}

#endif
