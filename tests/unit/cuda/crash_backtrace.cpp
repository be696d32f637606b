// The CUDA unit-test binary has ended with SIGSEGV after every test passed (rc 139, seen on
// the H200 only). To see where, this file prints the crashing thread's stack to stderr on a
// fatal signal, then lets the signal end the process as before (the exit status is kept, so
// the crash still fails the run). Only the CUDA build of the tests has it: the sanitizer builds
// keep their own handlers.
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace {

void print_stack_and_die(int sig) {
  const char* head = "aotrt_unit_tests: fatal signal; stack (addresses, then symbols):\n";
  (void)!write(STDERR_FILENO, head, std::strlen(head));
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

struct InstallCrashBacktrace {
  InstallCrashBacktrace() {
    // backtrace() loads libgcc on first use; do it now, not inside the handler.
    void* warm[1];
    (void)backtrace(warm, 1);
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) signal(sig, print_stack_and_die);
  }
} install_crash_backtrace;

}  // namespace
