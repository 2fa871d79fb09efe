// SPDX-License-Identifier: Apache-2.0
/* process_* metrics: parsing of stat/limits/fd/btime in a temp procfs tree,
 * hostile shapes (parentheses in the command name, a /proc/stat line longer
 * than the read buffer), and the real /proc of the test process. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "base/procstat.h"

/* fields 3.. after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt
 * cmajflt utime(14) stime(15) cutime cstime priority nice threads itrealvalue starttime(22)
 * vsize(23) rss(24) rsslim ... */
static void fake_stat(const char *root, const char *comm, const char *utime, const char *rss) {
  char line[512];
  snprintf(line, sizeof line,
           "4242 (%s) S 1 4242 4242 0 -1 4194560 100 0 0 0 %s 50 0 0 20 0 3 0 %s 123456789 %s "
           "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
           comm, utime, "12345", rss);
  fx_write(root, "self/stat", line);
}

static char *tree(void) {
  char *root = fx_tmpdir();
  long tck = sysconf(_SC_CLK_TCK);
  char ut[32];
  snprintf(ut, sizeof ut, "%ld", 3 * tck); /* 3 s user + 50 ticks system */
  fake_stat(root, "ioqos) (x y", ut, "100");
  fx_write(root, "self/limits",
           "Limit                     Soft Limit           Hard Limit           Units     \n"
           "Max cpu time              unlimited            unlimited            seconds   \n"
           "Max open files            1024                 1048576              files     \n");
  fx_write(root, "self/fd/0", "");
  fx_write(root, "self/fd/1", "");
  fx_write(root, "self/fd/2", "");
  /* an intr line far longer than the reader's 4096-byte line buffer, whose
   * second piece starts with "btime 9": only a real line start counts */
  size_t n = 20000;
  char *intr = malloc(n + 64);
  strcpy(intr, "intr 12");
  while (strlen(intr) < 4095)
    strcat(intr, " 0");
  strcat(intr, "btime 9");
  while (strlen(intr) < n)
    strcat(intr, " 0");
  strcat(intr, "\n");
  char *stat = malloc(strlen(intr) + 128);
  sprintf(stat, "cpu  1 2 3 4\n%sctxt 99\nbtime 1700000000\nprocesses 5\n", intr);
  fx_write(root, "stat", stat);
  free(intr);
  free(stat);
  return root;
}

Test(procstat, parses_a_procfs_tree) {
  char *root = tree();
  struct ioq_procstat s;
  ioq_err e = {0};
  cr_assert_eq(ioq_procstat_read(root, &s, &e), 0, "%s", e.msg);
  long tck = sysconf(_SC_CLK_TCK);
  cr_assert_float_eq(s.cpu_seconds, 3.0 + 50.0 / (double)tck, 1e-9);
  cr_assert_float_eq(s.start_time_seconds, 1700000000.0 + 12345.0 / (double)tck, 1e-6);
  cr_assert_eq(s.virtual_bytes, 123456789u);
  cr_assert_eq(s.resident_bytes, 100u * (uint64_t)sysconf(_SC_PAGESIZE));
  cr_assert_eq(s.max_fds, 1024u);
  cr_assert_eq(s.open_fds, 3u);
  fx_rmtree(root);
  free(root);
}

Test(procstat, unlimited_fds_and_exposition) {
  char *root = tree();
  fx_write(root, "self/limits", "Max open files            unlimited            unlimited            files\n");
  struct ioq_procstat s;
  ioq_err e = {0};
  cr_assert_eq(ioq_procstat_read(root, &s, &e), 0, "%s", e.msg);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ioq_procstat_write(f, &s);
  fclose(f);
  cr_assert(strstr(buf, "process_max_fds +Inf\n"), "%s", buf);
  cr_assert(strstr(buf, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "));
  cr_assert(strstr(buf, "process_open_fds 3\n"), "%s", buf);
  static const char *const fams[] = {"process_cpu_seconds_total", "process_start_time_seconds",
                                     "process_resident_memory_bytes", "process_virtual_memory_bytes",
                                     "process_open_fds", "process_max_fds"};
  for (size_t i = 0; i < 6; i++) {
    char h[128];
    snprintf(h, sizeof h, "# HELP %s ", fams[i]);
    cr_assert(strstr(buf, h), "no HELP for %s", fams[i]);
  }
  free(buf);
  fx_rmtree(root);
  free(root);
}

Test(procstat, malformed_files_fail_with_the_path) {
  char *root = tree();
  struct ioq_procstat s;
  ioq_err e = {0};
  fake_stat(root, "x", "-5", "100");
  cr_assert_eq(ioq_procstat_read(root, &s, &e), -1);
  cr_assert(strstr(e.msg, "self/stat: field 14 is not a number"), "%s", e.msg);
  fx_write(root, "self/stat", "4242 (truncated) S 1 2\n");
  cr_assert_eq(ioq_procstat_read(root, &s, &e), -1);
  cr_assert(strstr(e.msg, "fewer than 24 fields"), "%s", e.msg);
  fx_rmtree(root);
  free(root);

  root = tree();
  fx_write(root, "stat", "cpu 1 2\nintr 1 btime 5\n"); /* "btime" only mid-line */
  cr_assert_eq(ioq_procstat_read(root, &s, &e), -1);
  cr_assert(strstr(e.msg, "/stat: no btime line"), "%s", e.msg);
  fx_write(root, "stat", "btime\n");
  cr_assert_eq(ioq_procstat_read(root, &s, &e), -1);
  fx_write(root, "stat", "btime 1\n");
  fx_write(root, "self/limits", "Max cpu time unlimited\n");
  cr_assert_eq(ioq_procstat_read(root, &s, &e), -1);
  cr_assert(strstr(e.msg, "'Max open files'"), "%s", e.msg);
  fx_rmtree(root);
  free(root);

  cr_assert_eq(ioq_procstat_read("/nonexistent-proc", &s, &e), -1);
  cr_assert(strstr(e.msg, "/nonexistent-proc/self/stat"), "%s", e.msg);
}

Test(procstat, reads_the_real_proc) {
  struct ioq_procstat s;
  ioq_err e = {0};
  cr_assert_eq(ioq_procstat_read("/proc", &s, &e), 0, "%s", e.msg);
  cr_assert_geq(s.open_fds, 3u);
  cr_assert_gt(s.max_fds, 0u);
  cr_assert_gt(s.resident_bytes, 0u);
  cr_assert_geq(s.virtual_bytes, s.resident_bytes);
  double now = (double)time(NULL);
  /* started before now, and not before boot of any machine this runs on */
  cr_assert_leq(s.start_time_seconds, now + 1);
  cr_assert_gt(s.start_time_seconds, 1e9);
}
