/* remote_params.h - parsing POCL_REMOTE<n>_PARAMETERS (remote_params.c).  */

#ifndef POCL_REMOTE_PARAMS_H
#define POCL_REMOTE_PARAMS_H

#include <stdint.h>

/* Longest host name plus its NUL, as getaddrinfo takes them (RFC 1035).  */
#define POCL_REMOTE_HOST_MAX 256

typedef struct pocl_remote_params
{
  char host[POCL_REMOTE_HOST_MAX];
  uint16_t port;
  uint32_t device;
  /* empty without a peer address */
  char peer_host[POCL_REMOTE_HOST_MAX];
  uint16_t peer_port;
} pocl_remote_params;

/* host[:port]/device_index[#peer_host[:peer_port]] into *out: NULL, or why
   the string is refused (for a message naming the variable).  */
const char *pocl_remote_parse_parameters (const char *params,
                                          pocl_remote_params *out);

#endif
