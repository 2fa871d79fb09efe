// SPDX-License-Identifier: Apache-2.0
#include "base/fsutil.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ioq_path_join(char *out, size_t outsz, ioq_err *e, const char *first, ...) {
  size_t n = 0;
  va_list ap;
  va_start(ap, first);
  for (const char *p = first; p; p = va_arg(ap, const char *)) {
    if (n > 0 && out[n - 1] != '/' && *p != '/') {
      if (n + 1 >= outsz)
        goto toolong;
      out[n++] = '/';
    } else if (n > 0 && out[n - 1] == '/') {
      while (*p == '/')
        p++;
    }
    size_t l = strlen(p);
    if (n + l >= outsz)
      goto toolong;
    memcpy(out + n, p, l);
    n += l;
  }
  va_end(ap);
  if (outsz)
    out[n] = '\0';
  return 0;
toolong:
  va_end(ap);
  if (outsz)
    out[0] = '\0';
  errno = ENAMETOOLONG;
  return ioq_fail(e, ENAMETOOLONG, "path too long (starting %.200s)", first);
}

int ioq_read_file(const char *path, char **out, size_t *len, size_t max, ioq_err *e) {
  if (max == 0)
    max = 1u << 20;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ioq_fail_errno(e, "open %s", path);
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  if (!buf) {
    close(fd);
    return ioq_fail(e, ENOMEM, "read %s: out of memory", path);
  }
  for (;;) {
    if (n + 1 >= cap) {
      if (cap > max) {
        free(buf);
        close(fd);
        return ioq_fail(e, EFBIG, "read %s: file larger than %zu bytes", path, max);
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        close(fd);
        return ioq_fail(e, ENOMEM, "read %s: out of memory", path);
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + n, cap - n - 1);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int saved = errno;
      free(buf);
      close(fd);
      errno = saved;
      return ioq_fail_errno(e, "read %s", path);
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = '\0';
  *out = buf;
  if (len)
    *len = n;
  return 0;
}

bool ioq_copy(char *dst, size_t dstsz, const char *src) {
  if (dstsz == 0)
    return false;
  size_t n = strlen(src);
  if (n >= dstsz) {
    memcpy(dst, src, dstsz - 1);
    dst[dstsz - 1] = '\0';
    return false;
  }
  memcpy(dst, src, n + 1);
  return true;
}

void ioq_copy_trunc(char *dst, size_t dstsz, const char *src) {
  if (!ioq_copy(dst, dstsz, src))
    return; /* cut: what the caller asked for (a (void) cast does not silence the check) */
}

char *ioq_trim(char *s) {
  char *start = s;
  while (*start && isspace((unsigned char)*start))
    start++;
  if (start != s)
    memmove(s, start, strlen(start) + 1);
  size_t l = strlen(s);
  while (l > 0 && isspace((unsigned char)s[l - 1]))
    s[--l] = '\0';
  return s;
}

int ioq_read_line(const char *path, char *buf, size_t bufsz, ioq_err *e) {
  char *data;
  if (ioq_read_file(path, &data, NULL, 0, e) < 0)
    return -1;
  ioq_trim(data);
  if (strlen(data) >= bufsz) {
    free(data);
    return ioq_fail(e, EOVERFLOW, "read %s: content longer than %zu bytes", path, bufsz - 1);
  }
  strcpy(buf, data);
  free(data);
  return 0;
}

int ioq_parse_u64(const char *s, uint64_t *out) {
  if (!s || !isdigit((unsigned char)*s))
    return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return -1;
  *out = v;
  return 0;
}

int ioq_read_u64(const char *path, uint64_t *out, ioq_err *e) {
  char buf[64];
  if (ioq_read_line(path, buf, sizeof buf, e) < 0)
    return -1;
  if (ioq_parse_u64(buf, out) < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "read %s: '%s' is not an unsigned number", path, buf);
  return 0;
}

int ioq_write_file(const char *path, const char *data, ioq_err *e) {
  /* O_TRUNC: cgroup and sysfs files ignore it, plain files (test trees)
   * must not keep the tail of a longer earlier value. O_NOFOLLOW: these
   * files are never symlinks, so one planted in a pod's cgroup directory
   * must not redirect a privileged write elsewhere (ELOOP instead). */
  int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ELOOP)
      return ioq_fail(e, ELOOP, "open %s for writing: it is a symbolic link, refused", path);
    return ioq_fail_errno(e, "open %s for writing", path);
  }
  size_t len = strlen(data);
  ssize_t w;
  do
    w = write(fd, data, len);
  while (w < 0 && errno == EINTR);
  if (w < 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return ioq_fail_errno(e, "write '%s' to %s", data, path);
  }
  if ((size_t)w != len) {
    close(fd);
    return ioq_fail(e, EIO, "write '%s' to %s: short write (%zd of %zu bytes)", data, path, w, len);
  }
  if (close(fd) < 0)
    return ioq_fail_errno(e, "close %s", path);
  return 0;
}

int ioq_mkdir_p(const char *path, ioq_err *e) {
  char tmp[PATH_MAX];
  if (strlen(path) >= sizeof tmp)
    return ioq_fail(e, ENAMETOOLONG, "mkdir %s: path too long", path);
  strcpy(tmp, path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
      return ioq_fail_errno(e, "mkdir %s", tmp);
    *p = '/';
  }
  if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
    return ioq_fail_errno(e, "mkdir %s", tmp);
  return 0;
}

int ioq_write_file_atomic(const char *path, const char *data, ioq_err *e) {
  char dir[PATH_MAX], tmp[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir ||
      snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return ioq_fail(e, ENAMETOOLONG, "write %s: path too long", path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    if (ioq_mkdir_p(dir, e) < 0)
      return -1;
  }
  /* O_NOFOLLOW: a symlink planted at the temp name must not redirect the
   * write (rename then replaces a link at `path` itself, never its target) */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return ioq_fail_errno(e, "create %s", tmp);
  size_t len = strlen(data), off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      int saved = errno;
      close(fd);
      unlink(tmp);
      errno = saved;
      return ioq_fail_errno(e, "write %s", tmp);
    }
    off += (size_t)w;
  }
  if (fsync(fd) < 0 || close(fd) < 0) {
    int saved = errno;
    unlink(tmp);
    errno = saved;
    return ioq_fail_errno(e, "sync %s", tmp);
  }
  if (rename(tmp, path) < 0) {
    int saved = errno;
    unlink(tmp);
    errno = saved;
    return ioq_fail_errno(e, "rename %s to %s", tmp, path);
  }
  return 0;
}

bool ioq_path_exists(const char *path) { return access(path, F_OK) == 0; }

bool ioq_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
