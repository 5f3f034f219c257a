/* tsan_init.c - preloaded after gcc 12's libtsan.so into uninstrumented
   clients (tools/sanitize.sh tsan).  libtsan initialises itself in its first
   interceptor that asks for it; __tls_get_addr's does not, and calls a null
   function when it comes first: a client whose first library call is
   clGetPlatformIDs (the ICD loader reads a TLS variable) crashed at once.
   One malloc from a constructor initialises it before main (volatile: a
   compiler may drop a malloc whose block is only freed).  */

#include <stdlib.h>

__attribute__ ((constructor)) static void
tsan_init (void)
{
  void *volatile p = malloc (1);
  free (p);
}
