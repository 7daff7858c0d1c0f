/* The bed's sandbox image: holds the pod's namespaces, reaps children, exits on SIGTERM or SIGINT. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
  signal(SIGTERM, quit);
  signal(SIGINT, quit);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
