/* The control of tests/executables/name_lookup_netns_test.sh: a static executable that calls
 * glibc's own getaddrinfo, so its NSS, as the project's executables would without
 * lib/net/libc_name_lookup.cc. Prints "ADDRESS" lines, exits 0 when the name resolved. */
#include <netdb.h>
#include <stdio.h>
#include <sys/socket.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  struct addrinfo hints = {0};
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* list = NULL;
  int rc = getaddrinfo(argv[1], NULL, &hints, &list);
  if (rc != 0) {
    printf("error %s\n", gai_strerror(rc));
    return 1;
  }
  for (struct addrinfo* ai = list; ai != NULL; ai = ai->ai_next) {
    char host[NI_MAXHOST];
    if (getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof(host), NULL, 0, NI_NUMERICHOST) ==
        0) {
      printf("%s\n", host);
    }
  }
  freeaddrinfo(list);
  return 0;
}
