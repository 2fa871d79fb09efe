// SPDX-License-Identifier: Apache-2.0
/* ioqos-scheduler-ext: the HTTP scheduler extender kube-scheduler calls to
 * place pods by the free I/O units of each node's disks. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "flags.h"
#include "base/log.h"
#include "service.h"

int main(int argc, char **argv) {
  struct ext_flags f;
  ioq_err e = {0};
  if (ext_flags_parse(argc, argv, &f, &e) < 0) {
    fprintf(stderr, "ioqos-scheduler-ext: %s\nTry 'ioqos-scheduler-ext --help'.\n", e.msg);
    return 2;
  }
  if (f.help) {
    ext_flags_usage(stdout);
    return 0;
  }
  if (f.version) {
    printf("ioqos-scheduler-ext %s\n", IOQOS_VERSION);
    return 0;
  }
  ioq_log_set_level(f.log_level);
  ioq_log_set_format(f.log_format);

  /* Signals are taken synchronously by this thread; every thread started
   * from here on inherits the blocked mask. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);

  struct ext_service *s = ext_service_start(&f, &e);
  if (!s) {
    ioq_error("cannot start error=\"%s\"", e.msg);
    return 1;
  }
  /* SIGTERM or SIGINT ends the wait; every second without one, the tick */
  const struct timespec second = {1, 0};
  int sig;
  while ((sig = sigtimedwait(&stop, NULL, &second)) < 0)
    ext_service_tick(s);
  ioq_info("shutting down signal=%s grace_s=%u", sig == SIGTERM ? "SIGTERM" : "SIGINT",
           f.shutdown_grace_s);
  ext_service_stop(s, f.shutdown_grace_s);
  ioq_info("stopped");
  return 0;
}
