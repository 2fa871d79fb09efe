// SPDX-License-Identifier: Apache-2.0
/* process_* metrics from procfs, parsed the way Prometheus' own procfs
 * library does (prometheus/procfs): stat fields after the last ')', CPU time
 * in clock ticks, RSS in pages, start time = btime + starttime ticks. */
#include "base/procstat.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/log.h"

#define STAT_MAX 4096           /* /proc/self/stat is one line of ~300 bytes */
#define LIMITS_MAX 8192         /* /proc/self/limits is ~1.4 KB */
#define PROC_STAT_LINE_MAX 4096 /* the btime line; longer lines (intr) are skipped */

static int parse_u64_tok(const char *tok, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(tok, &end, 10);
  if (errno || end == tok || *end || tok[0] == '-')
    return -1;
  *out = v;
  return 0;
}

/* stat fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize), 24 (rss) */
static int read_stat(const char *proc, uint64_t *utime, uint64_t *stime, uint64_t *start,
                     uint64_t *vsize, uint64_t *rss, ioq_err *e) {
  char path[4096], *buf;
  if (ioq_path_join(path, sizeof path, e, proc, "self/stat", NULL) < 0 ||
      ioq_read_file(path, &buf, NULL, STAT_MAX, e) < 0)
    return -1;
  /* the command name (field 2) is in parentheses and may hold spaces and ')' */
  char *p = strrchr(buf, ')');
  uint64_t *want[25] = {[14] = utime, [15] = stime, [22] = start, [23] = vsize, [24] = rss};
  int field = 2, got = 0;
  char *save = NULL;
  for (char *tok = p ? strtok_r(p + 1, " \n", &save) : NULL; tok && field < 24;
       tok = strtok_r(NULL, " \n", &save)) {
    field++;
    if (want[field]) {
      if (parse_u64_tok(tok, want[field]) < 0) {
        ioq_fail(e, IOQ_EINVAL_INPUT, "%s: field %d is not a number: '%.32s'", path, field, tok);
        free(buf); /* tok points into buf: freed after the message is made */
        return -1;
      }
      got++;
    }
  }
  free(buf);
  if (got != 5)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: fewer than 24 fields", path);
  return 0;
}

static int read_btime(const char *proc, uint64_t *btime, ioq_err *e) {
  char path[4096];
  if (ioq_path_join(path, sizeof path, e, proc, "stat", NULL) < 0)
    return -1;
  FILE *f = fopen(path, "re");
  if (!f)
    return ioq_fail_errno(e, "open %s", path);
  /* fixed buffer: the long intr/softirq lines are read in pieces and skipped */
  char line[PROC_STAT_LINE_MAX];
  bool at_start = true, found = false;
  while (!found && fgets(line, sizeof line, f)) {
    bool whole = strchr(line, '\n') != NULL;
    if (at_start && strncmp(line, "btime ", 6) == 0) {
      line[strcspn(line, "\n")] = '\0';
      if (parse_u64_tok(ioq_trim(line + 6), btime) < 0) {
        fclose(f);
        return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: bad btime line", path);
      }
      found = true;
    }
    at_start = whole;
  }
  int rerr = ferror(f);
  fclose(f);
  if (rerr)
    return ioq_fail(e, EIO, "read %s: I/O error", path);
  if (!found)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: no btime line", path);
  return 0;
}

/* "Max open files            1024                 1048576              files" */
static int read_max_fds(const char *proc, uint64_t *max, ioq_err *e) {
  char path[4096], *buf;
  if (ioq_path_join(path, sizeof path, e, proc, "self/limits", NULL) < 0 ||
      ioq_read_file(path, &buf, NULL, LIMITS_MAX, e) < 0)
    return -1;
  const char *key = "Max open files";
  char *l = strstr(buf, key);
  int rc = -1;
  if (l) {
    char soft[32] = "";
    if (sscanf(l + strlen(key), "%31s", soft) == 1) {
      if (strcmp(soft, "unlimited") == 0) {
        *max = UINT64_MAX;
        rc = 0;
      } else {
        rc = parse_u64_tok(soft, max);
      }
    }
  }
  free(buf);
  if (rc < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: no readable 'Max open files' line", path);
  return 0;
}

static int count_fds(const char *proc, uint64_t *n, ioq_err *e) {
  char path[4096];
  if (ioq_path_join(path, sizeof path, e, proc, "self/fd", NULL) < 0)
    return -1;
  DIR *d = opendir(path);
  if (!d)
    return ioq_fail_errno(e, "open %s", path);
  uint64_t c = 0;
  struct dirent *de;
  errno = 0;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
      c++;
  int err = errno;
  closedir(d);
  if (err) {
    errno = err;
    return ioq_fail_errno(e, "read %s", path);
  }
  *n = c; /* includes the descriptor opendir() holds, as Prometheus' procfs does */
  return 0;
}

int ioq_procstat_read(const char *proc, struct ioq_procstat *out, ioq_err *e) {
  long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  if (tck <= 0 || page <= 0)
    return ioq_fail_errno(e, "sysconf(CLK_TCK, PAGESIZE)");
  uint64_t ut, st, start, vsize, rss, btime;
  if (read_stat(proc, &ut, &st, &start, &vsize, &rss, e) < 0 || read_btime(proc, &btime, e) < 0 ||
      read_max_fds(proc, &out->max_fds, e) < 0 || count_fds(proc, &out->open_fds, e) < 0)
    return -1;
  out->cpu_seconds = (double)(ut + st) / (double)tck;
  out->start_time_seconds = (double)btime + (double)start / (double)tck;
  out->virtual_bytes = vsize;
  out->resident_bytes = rss * (uint64_t)page;
  return 0;
}

void ioq_procstat_write(FILE *f, const struct ioq_procstat *s) {
  fprintf(f,
          "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
          "# TYPE process_cpu_seconds_total counter\n"
          "process_cpu_seconds_total %.2f\n"
          "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
          "# TYPE process_start_time_seconds gauge\n"
          "process_start_time_seconds %.2f\n"
          "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
          "# TYPE process_resident_memory_bytes gauge\n"
          "process_resident_memory_bytes %llu\n"
          "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
          "# TYPE process_virtual_memory_bytes gauge\n"
          "process_virtual_memory_bytes %llu\n"
          "# HELP process_open_fds Number of open file descriptors.\n"
          "# TYPE process_open_fds gauge\n"
          "process_open_fds %llu\n"
          "# HELP process_max_fds Maximum number of open file descriptors.\n"
          "# TYPE process_max_fds gauge\n",
          s->cpu_seconds, s->start_time_seconds, (unsigned long long)s->resident_bytes,
          (unsigned long long)s->virtual_bytes, (unsigned long long)s->open_fds);
  if (s->max_fds == UINT64_MAX)
    fputs("process_max_fds +Inf\n", f);
  else
    fprintf(f, "process_max_fds %llu\n", (unsigned long long)s->max_fds);
}

void ioq_procstat_expose(FILE *f) {
  struct ioq_procstat s;
  ioq_err e;
  if (ioq_procstat_read("/proc", &s, &e) < 0) {
    ioq_warn("metrics: process_* metrics left out of this scrape: %s", e.msg);
    return;
  }
  ioq_procstat_write(f, &s);
}
