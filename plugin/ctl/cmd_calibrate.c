// SPDX-License-Identifier: Apache-2.0
/* ioqosctl calibrate: measure a disk through a temp file in a directory. */
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "probe/calibrate.h"
#include "config/config.h"
#include "base/fsutil.h"
#include "probe/probe.h"
#include "util.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: ioqosctl calibrate --dir PATH [--seconds N] [--config FILE] [--output FILE] [--no-save]\n\n"
          "Measures the disk holding PATH with direct I/O on a temporary file in PATH (never on a\n"
          "raw device): sequential write and read (1 MiB), random read and write (4 KiB), N\n"
          "seconds each. The file is unlinked as soon as it is created, so nothing is left\n"
          "behind, also on Ctrl-C. The result is saved where the capacity model finds it\n"
          "(calibrationFile of the config, default " IOQ_DEFAULT_CALIBRATION_FILE ").\n"
          "Run it on an idle disk: other I/O during the run lowers the capacity found.\n\n"
          "  --dir PATH      a directory on the disk to measure (required)\n"
          "  --seconds N     seconds per phase, 1..600 (default 5)\n"
          "  --config FILE   node config (for calibrationFile)\n"
          "  --output FILE   save here instead of the config's calibrationFile\n"
          "  --no-save       print the result only\n");
}

struct progress {
  bool tty;
};

static void on_progress(void *ud, enum ioq_cal_phase ph, double el, double total, double rate,
                        const char *unit) {
  struct progress *p = ud;
  fprintf(stderr, "%s  %-16s %4.0f/%.0f s  %10.1f %s%s", p->tty ? "\r" : "", ioq_cal_phase_name(ph),
          el, total, rate, unit, p->tty ? "   " : "\n");
  fflush(stderr);
}

int cmd_calibrate(int argc, char **argv) {
  static const struct option longopts[] = {
      {"dir", required_argument, NULL, 'd'},    {"seconds", required_argument, NULL, 's'},
      {"config", required_argument, NULL, 'c'}, {"output", required_argument, NULL, 'o'},
      {"no-save", no_argument, NULL, 'n'},      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *dir = NULL, *config = NULL, *output = NULL;
  uint64_t seconds = 5;
  bool save = true;
  int c;
  while ((c = ctl_getopt(argc, argv, "h", longopts, "calibrate")) != -1) {
    switch (c) {
    case 'd': dir = optarg; break;
    case 's':
      if (ctl_parse_u64("calibrate", "--seconds", optarg, 1, 600, &seconds) < 0)
        return 2;
      break;
    case 'c': config = optarg; break;
    case 'o': output = optarg; break;
    case 'n': save = false; break;
    case 'h': usage(stdout); return 0;
    default: return 2;
    }
  }
  if (optind < argc)
    return ctl_usage_error("calibrate", "unexpected argument '%s'", argv[optind]);
  if (!dir)
    return ctl_usage_error("calibrate", "--dir PATH is required");

  ioq_err e = {0};
  struct ioq_config cfg;
  if (ioq_config_load(config, &cfg, &e) < 0) {
    fprintf(stderr, "ioqosctl calibrate: %s\n", e.msg);
    return 1;
  }
  struct ioq_roots roots;
  ioq_roots_default(&roots);
  struct ioq_disk disk = {0};
  char absdir[4096];
  if (!realpath(dir, absdir)) {
    fprintf(stderr, "ioqosctl calibrate: --dir %s: no such directory\n", dir);
    ioq_config_free(&cfg);
    return 1;
  }
  if (ioq_disk_resolve(&roots, absdir, &disk, &e) < 0) {
    fprintf(stderr, "ioqosctl calibrate: which disk holds %s: %s\n", absdir, e.msg);
    ioq_config_free(&cfg);
    return 1;
  }
  fprintf(stderr, "calibrating %s (%u:%u): %s; %llu s per phase, 4 phases\n", disk.dev.name,
          disk.dev.major, disk.dev.minor, disk.resolution, (unsigned long long)seconds);

  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  struct progress pr = {.tty = isatty(STDERR_FILENO)};
  struct ioq_cal_opts co = {.dir = absdir, .seconds = (unsigned)seconds, .stop = &g_stop,
                            .progress = on_progress, .progress_ud = &pr};
  struct ioq_calibration cal = {0};
  int rc = ioq_calibrate(&co, &cal, &e);
  if (pr.tty)
    fprintf(stderr, "\n");
  if (rc < 0) {
    fprintf(stderr, "ioqosctl calibrate: %s (the temporary file is gone)\n", e.msg);
    ioq_config_free(&cfg);
    return g_stop ? 130 : 1;
  }
  ioq_copy_trunc(cal.disk, sizeof cal.disk, disk.dev.name); /* same-size fields: fits */
  snprintf(cal.dev, sizeof cal.dev, "%u:%u", disk.dev.major, disk.dev.minor);
  printf("disk %s (%s)\n", cal.disk, cal.dev);
  printf("  sequential write  %10.1f MiB/s\n", (double)cal.seq_write_bps / 1048576.0);
  printf("  sequential read   %10.1f MiB/s\n", (double)cal.seq_read_bps / 1048576.0);
  printf("  random read 4k    %10llu IOPS\n", (unsigned long long)cal.rand_read_iops);
  printf("  random write 4k   %10llu IOPS\n", (unsigned long long)cal.rand_write_iops);
  printf("  capacity used by ioqos: %.1f MiB/s, %llu IOPS (the lower of read and write)\n",
         (double)(cal.seq_read_bps < cal.seq_write_bps ? cal.seq_read_bps : cal.seq_write_bps) / 1048576.0,
         (unsigned long long)(cal.rand_read_iops < cal.rand_write_iops ? cal.rand_read_iops : cal.rand_write_iops));
  if (save) {
    const char *file = output ? output : cfg.calibration_file;
    if (ioq_calibration_save(file, &cal, &e) < 0) {
      fprintf(stderr, "ioqosctl calibrate: save: %s\n", e.msg);
      ioq_config_free(&cfg);
      return 1;
    }
    printf("saved to %s\n", file);
  }
  ioq_config_free(&cfg);
  return 0;
}
