/* A stand-in for an NSS module of another glibc (tests/executables/name_lookup_netns_test.sh):
 * loading it stops the process with SIGILL, as loading a real one into a static executable
 * built against a different glibc aborts it. Linked without any library, so it loads anywhere. */
__attribute__((constructor)) static void StopTheProcess(void) { __builtin_trap(); }
