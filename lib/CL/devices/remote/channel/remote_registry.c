/* remote_registry.c - the servers this client knows, one record per
   host:port, under one lock.  At the bottom of the channel: sessions
   (remote_session.c) add and replace records, the coalescing timer
   (remote_send.c) walks them, and neither calls the other for it.  */

#include <string.h>

#include "remote_channel_private.h"

static pthread_mutex_t servers_lock = PTHREAD_MUTEX_INITIALIZER;
static remote_server *servers = NULL;
/* records of dead sessions that a new one replaced: kept, since threads of
   the dead session may still hold them */
static remote_server *retired = NULL;

void
pocl_remote_registry_lock (void)
{
  pthread_mutex_lock (&servers_lock);
}

int
pocl_remote_registry_trylock (void)
{
  return pthread_mutex_trylock (&servers_lock);
}

void
pocl_remote_registry_unlock (void)
{
  pthread_mutex_unlock (&servers_lock);
}

remote_server *
pocl_remote_registry_first (void)
{
  return servers;
}

remote_server *
pocl_remote_registry_find (const char *host, uint16_t port)
{
  remote_server *s;
  for (s = servers; s; s = s->next)
    if (s->port == port && strcmp (s->host, host) == 0)
      break;
  return s;
}

void
pocl_remote_registry_add (remote_server *s)
{
  s->next = servers;
  servers = s;
}

int
pocl_remote_registry_holds (const remote_server *s)
{
  const remote_server *o;
  for (o = servers; o && o != s; o = o->next)
    ;
  return o != NULL;
}

void
pocl_remote_registry_replace (remote_server *old, remote_server *s)
{
  remote_server **p;
  for (p = &servers; *p && *p != old; p = &(*p)->next)
    ;
  if (*p == NULL)
    return;
  s->next = old->next;
  *p = s;
  old->next = retired;
  retired = old;
}
