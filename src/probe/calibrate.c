// SPDX-License-Identifier: Apache-2.0
#include "probe/calibrate.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/monoclock.h"
#include "base/numconv.h"

#define SEQ_BLOCK (1u << 20)
#define RAND_BLOCK 4096u
#define SEQ_THREADS 4
#define RAND_THREADS 16

static const char *const g_phase[] = {"sequential write", "sequential read", "random read 4k",
                                      "random write 4k"};
const char *ioq_cal_phase_name(enum ioq_cal_phase p) { return g_phase[p]; }

struct job {
  int fd;
  enum ioq_cal_phase phase;
  uint64_t file_size;
  unsigned nthreads;
  atomic_bool done;
  atomic_uint_fast64_t bytes, ios;
  atomic_int err; /* first errno seen */
  /* bytes of each sequential slice that hold written data: reads must stay
   * there, an unwritten (fallocated) extent reads as zeros without any I/O */
  uint64_t covered[SEQ_THREADS];
};

struct worker {
  struct job *job;
  unsigned idx;
  uint64_t seed;
};

static uint64_t rnd(uint64_t *s) {
  /* xorshift64*: plenty for spreading offsets */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static void *work(void *arg) {
  struct worker *w = arg;
  struct job *j = w->job;
  bool seq = j->phase == IOQ_CAL_SEQ_WRITE || j->phase == IOQ_CAL_SEQ_READ;
  bool wr = j->phase == IOQ_CAL_SEQ_WRITE || j->phase == IOQ_CAL_RAND_WRITE;
  size_t bs = seq ? SEQ_BLOCK : RAND_BLOCK;
  void *buf;
  if (posix_memalign(&buf, 4096, bs) != 0) {
    int zero = 0;
    atomic_compare_exchange_strong(&j->err, &zero, ENOMEM);
    return NULL;
  }
  /* non-zero, non-repeating-ish data so compressing devices are not flattered */
  uint64_t s = w->seed;
  for (size_t i = 0; i < bs / 8; i++)
    ((uint64_t *)buf)[i] = rnd(&s);
  /* sequential: each thread streams its own slice of the file */
  uint64_t slice = j->file_size / SEQ_THREADS / SEQ_BLOCK * SEQ_BLOCK;
  uint64_t base = slice * w->idx, off = 0, maxoff = 0;
  uint64_t limit = j->phase == IOQ_CAL_SEQ_WRITE ? slice : (seq ? j->covered[w->idx] : 0);
  while (!atomic_load(&j->done)) {
    uint64_t pos;
    if (seq) {
      if (off + bs > limit)
        off = 0;
      pos = base + off;
      off += bs;
      if (off > maxoff)
        maxoff = off;
    } else {
      unsigned sl = (unsigned)(rnd(&s) % SEQ_THREADS);
      while (j->covered[sl] < RAND_BLOCK)
        sl = (sl + 1) % SEQ_THREADS;
      pos = slice * sl + (rnd(&s) % (j->covered[sl] / RAND_BLOCK)) * RAND_BLOCK;
    }
    ssize_t r = wr ? pwrite(j->fd, buf, bs, (off_t)pos) : pread(j->fd, buf, bs, (off_t)pos);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int zero = 0;
      atomic_compare_exchange_strong(&j->err, &zero, errno);
      break;
    }
    atomic_fetch_add(&j->bytes, (uint64_t)r);
    atomic_fetch_add(&j->ios, 1);
  }
  if (j->phase == IOQ_CAL_SEQ_WRITE)
    j->covered[w->idx] = maxoff;
  free(buf);
  return NULL;
}

static int run_phase(const struct ioq_cal_opts *o, int fd, uint64_t size, enum ioq_cal_phase ph,
                     uint64_t *covered, double *rate, ioq_err *e) {
  struct job j = {.fd = fd, .phase = ph, .file_size = size};
  memcpy(j.covered, covered, sizeof j.covered);
  j.nthreads = (ph == IOQ_CAL_SEQ_WRITE || ph == IOQ_CAL_SEQ_READ) ? SEQ_THREADS : RAND_THREADS;
  pthread_t th[RAND_THREADS];
  struct worker w[RAND_THREADS];
  unsigned started = 0;
  double t0 = ioq_mono_s();
  for (unsigned i = 0; i < j.nthreads; i++) {
    w[i] = (struct worker){&j, i, 0x9e3779b97f4a7c15ull * (i + 1) + (uint64_t)ph};
    if (pthread_create(&th[i], NULL, work, &w[i]) != 0)
      break;
    started++;
  }
  bool seq = j.nthreads == SEQ_THREADS;
  const char *unit = seq ? "MiB/s" : "IOPS";
  double next = t0 + 1.0, end = t0 + o->seconds;
  while (ioq_mono_s() < end && !(o->stop && *o->stop) && !atomic_load(&j.err) && started == j.nthreads) {
    usleep(50000);
    double t = ioq_mono_s();
    if (t >= next && o->progress) {
      double r = seq ? (double)atomic_load(&j.bytes) / (1 << 20) / (t - t0)
                     : (double)atomic_load(&j.ios) / (t - t0);
      o->progress(o->progress_ud, ph, t - t0, o->seconds, r, unit);
      next += 1.0;
    }
  }
  atomic_store(&j.done, true);
  for (unsigned i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  if (ph == IOQ_CAL_SEQ_WRITE)
    memcpy(covered, j.covered, sizeof j.covered);
  /* writes count only once they are on stable storage */
  if ((ph == IOQ_CAL_SEQ_WRITE || ph == IOQ_CAL_RAND_WRITE) && fdatasync(fd) < 0)
    return ioq_fail_errno(e, "fdatasync calibration file");
  double el = ioq_mono_s() - t0;
  if (started != j.nthreads)
    return ioq_fail(e, EAGAIN, "could not start %u I/O threads", j.nthreads);
  if (o->stop && *o->stop)
    return ioq_fail(e, ECANCELED, "calibration interrupted");
  int err = atomic_load(&j.err);
  if (err) {
    if (err == EINVAL)
      return ioq_fail(e, err, "%s: direct I/O rejected (EINVAL): the filesystem of %s does not "
                      "support O_DIRECT with %u-byte blocks", g_phase[ph], o->dir,
                      seq ? SEQ_BLOCK : RAND_BLOCK);
    errno = err;
    return ioq_fail_errno(e, "%s on a file in %s", g_phase[ph], o->dir);
  }
  *rate = seq ? (double)atomic_load(&j.bytes) / el : (double)atomic_load(&j.ios) / el;
  return 0;
}

int ioq_calibrate(const struct ioq_cal_opts *o, struct ioq_calibration *out, ioq_err *e) {
  if (!o->dir || !ioq_is_dir(o->dir))
    return ioq_fail(e, ENOTDIR, "calibration directory %s does not exist",
                    o->dir ? o->dir : "(null)");
  if (o->seconds < 1)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "calibration needs at least 1 second per phase");
  struct statvfs vfs;
  if (statvfs(o->dir, &vfs) < 0)
    return ioq_fail_errno(e, "statvfs %s", o->dir);
  uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
  uint64_t size = o->file_size;
  if (!size) {
    size = avail / 10;
    if (size > (1ull << 30))
      size = 1ull << 30;
  }
  size = size / (SEQ_BLOCK * SEQ_THREADS) * (SEQ_BLOCK * SEQ_THREADS);
  if (size < (64ull << 20) || size > avail)
    return ioq_fail(e, ENOSPC, "%s has %llu MiB free; calibration needs a %llu MiB file", o->dir,
                    (unsigned long long)(avail >> 20),
                    (unsigned long long)((size < (64ull << 20) ? 64ull << 20 : size) >> 20));

  char path[4096];
  snprintf(path, sizeof path, "%s/.ioqos-calibrate.%ld", o->dir, (long)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EINVAL)
      return ioq_fail(e, EINVAL, "open %s with O_DIRECT: the filesystem does not support direct "
                      "I/O (tmpfs?); pick a directory on the disk to calibrate", path);
    return ioq_fail_errno(e, "create %s", path);
  }
  /* gone from the directory at once: nothing is left behind on Ctrl-C or kill */
  unlink(path);
  int rc = 0;
  if (posix_fallocate(fd, 0, (off_t)size) != 0 && ftruncate(fd, (off_t)size) < 0)
    rc = ioq_fail_errno(e, "allocate %llu bytes in %s", (unsigned long long)size, o->dir);
  double r[4] = {0};
  uint64_t covered[SEQ_THREADS] = {0};
  for (int ph = 0; rc == 0 && ph < 4; ph++) {
    rc = run_phase(o, fd, size, (enum ioq_cal_phase)ph, covered, &r[ph], e);
    if (rc == 0 && ph == IOQ_CAL_SEQ_WRITE)
      for (int i = 0; i < SEQ_THREADS; i++)
        if (covered[i] < SEQ_BLOCK)
          rc = ioq_fail(e, EIO, "sequential write made no progress in %u s on %s", o->seconds,
                        o->dir);
  }
  close(fd);
  if (rc < 0)
    return -1;
  uint64_t *dst[4] = {[IOQ_CAL_SEQ_WRITE] = &out->seq_write_bps,
                      [IOQ_CAL_SEQ_READ] = &out->seq_read_bps,
                      [IOQ_CAL_RAND_READ] = &out->rand_read_iops,
                      [IOQ_CAL_RAND_WRITE] = &out->rand_write_iops};
  for (int ph = 0; ph < 4; ph++)
    if (ioq_u64_from_double(r[ph], g_phase[ph], dst[ph], e) < 0)
      return -1;
  out->seconds = o->seconds;
  ioq_copy_trunc(out->dir, sizeof out->dir, o->dir); /* informative: where the file was */
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out->measured_at, sizeof out->measured_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return 0;
}
