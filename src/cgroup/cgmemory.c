// SPDX-License-Identifier: Apache-2.0
/* A cgroup's memory as the I/O side needs it (cgroup v2): the page cache in
 * memory.stat (what a buffered writer has queued for the disk, what reclaim
 * can free) and memory.high, the one memory file ioqos writes: the bound on
 * the page cache of pods without a grant (docs/ungranted.md, "Buffered
 * writers without a grant"). Contract in cgwrite.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgfile.h"
#include "base/fsutil.h"

static const struct {
  const char *key;
  unsigned bit;
  size_t off;
} memstat_keys[] = {
    {"anon", IOQ_MEMSTAT_ANON, offsetof(struct ioq_memstat, anon)},
    {"file", IOQ_MEMSTAT_FILE, offsetof(struct ioq_memstat, file)},
    {"active_file", IOQ_MEMSTAT_ACTIVE_FILE, offsetof(struct ioq_memstat, active_file)},
    {"inactive_file", IOQ_MEMSTAT_INACTIVE_FILE, offsetof(struct ioq_memstat, inactive_file)},
    {"file_dirty", IOQ_MEMSTAT_DIRTY, offsetof(struct ioq_memstat, file_dirty)},
    {"file_writeback", IOQ_MEMSTAT_WRITEBACK, offsetof(struct ioq_memstat, file_writeback)},
    {"shmem", IOQ_MEMSTAT_SHMEM, offsetof(struct ioq_memstat, shmem)},
};

int ioq_memstat_parse(const char *content, unsigned need, struct ioq_memstat *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  for (const char *line = content; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    uint64_t v;
    char key[32], buf[64];
    /* "key value" per line (parsed within the line); longer lines are other keys */
    if (len < sizeof buf) {
      memcpy(buf, line, len);
      buf[len] = '\0';
    } else
      buf[0] = '\0';
    if (buf[0] && sscanf(buf, "%31s %" SCNu64, key, &v) == 2)
      for (size_t k = 0; k < sizeof memstat_keys / sizeof memstat_keys[0]; k++)
        if (!strcmp(key, memstat_keys[k].key)) {
          *(uint64_t *)((char *)out + memstat_keys[k].off) = v;
          out->have |= memstat_keys[k].bit;
        }
    line = nl ? nl + 1 : NULL;
  }
  for (size_t k = 0; k < sizeof memstat_keys / sizeof memstat_keys[0]; k++)
    if ((need & memstat_keys[k].bit) && !(out->have & memstat_keys[k].bit))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "memory.stat: no %s line", memstat_keys[k].key);
  return 0;
}

static int need_memory(const struct ioq_cg *cg, const char *what, ioq_err *e) {
  if (cg->version != IOQ_CGV2)
    return ioq_fail(e, IOQ_EUNSUPPORTED, "%s per cgroup is read on cgroup v2 only", what);
  if (!ioq_cg_has(cg, "memory.stat"))
    return ioq_fail(e, IOQ_EUNSUPPORTED, "%s has no memory.stat (memory controller not enabled)", cg->dir);
  return 0;
}

static int read_stat(const struct ioq_cg *cg, unsigned need, struct ioq_memstat *out, ioq_err *e) {
  char *c = NULL;
  if (ioq_cg_read(cg, "memory.stat", &c, e) < 0)
    return -1;
  int rc = ioq_memstat_parse(c, need, out, e);
  free(c);
  if (rc < 0)
    ioq_err_prefix(e, "%s", cg->dir);
  return rc;
}

int ioq_cg_read_dirty(const struct ioq_cg *cg, uint64_t *dirty, uint64_t *writeback, ioq_err *e) {
  struct ioq_memstat st;
  if (need_memory(cg, "page cache", e) < 0 ||
      read_stat(cg, IOQ_MEMSTAT_DIRTY | IOQ_MEMSTAT_WRITEBACK, &st, e) < 0)
    return -1;
  *dirty = st.file_dirty;
  *writeback = st.file_writeback;
  return 0;
}

int ioq_memory_value_parse(const char *s, uint64_t *out) {
  char buf[32];
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
    n--;
  if (!n || n >= sizeof buf)
    return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (!strcmp(buf, "max")) {
    *out = IOQ_MEMORY_MAX;
    return 0;
  }
  return ioq_parse_u64(buf, out);
}

static int read_value(const struct ioq_cg *cg, const char *name, uint64_t *out, ioq_err *e) {
  char *c = NULL;
  if (ioq_cg_read(cg, name, &c, e) < 0)
    return -1;
  int rc = ioq_memory_value_parse(c, out);
  if (rc < 0)
    ioq_fail(e, IOQ_EINVAL_INPUT, "%s/%s: not a byte count or \"max\": %.40s", cg->dir, name, c);
  free(c);
  return rc;
}

int ioq_cg_read_memory(const struct ioq_cg *cg, struct ioq_cg_memory *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (need_memory(cg, "memory", e) < 0 ||
      read_stat(cg, IOQ_MEMSTAT_ACTIVE_FILE | IOQ_MEMSTAT_INACTIVE_FILE | IOQ_MEMSTAT_DIRTY |
                        IOQ_MEMSTAT_WRITEBACK,
                &out->stat, e) < 0 ||
      read_value(cg, "memory.current", &out->current, e) < 0 ||
      read_value(cg, "memory.high", &out->high, e) < 0 || read_value(cg, "memory.max", &out->max, e) < 0)
    return -1;
  if (out->current == IOQ_MEMORY_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s/memory.current: \"max\" is not a usage", cg->dir);
  return 0;
}

uint64_t ioq_memory_pinned(const struct ioq_cg_memory *m) {
  uint64_t lru = m->stat.active_file + m->stat.inactive_file;
  return m->current > lru ? m->current - lru : 0;
}

int ioq_cg_write_memory_high(const struct ioq_cg *cg, uint64_t bytes, uint64_t *readback, ioq_err *e) {
  if (cg->version != IOQ_CGV2)
    return ioq_fail(e, IOQ_EUNSUPPORTED, "memory.high exists on cgroup v2 only");
  if (!ioq_cg_has(cg, "memory.high"))
    return ioq_fail(e, IOQ_EUNSUPPORTED, "%s has no memory.high (memory controller not enabled)", cg->dir);
  /* the kernel keeps whole pages (rounded down): write what it will hold,
   * so that the read-back compares equal */
  long ps = sysconf(_SC_PAGESIZE);
  uint64_t page = ps > 0 ? (uint64_t)ps : 4096;
  char val[32];
  uint64_t want = bytes;
  if (bytes == IOQ_MEMORY_MAX)
    snprintf(val, sizeof val, "max");
  else {
    want = bytes / page * page;
    if (!want)
      want = page;
    snprintf(val, sizeof val, "%" PRIu64, want);
  }
  if (ioq_cg_write(cg, "memory.high", val, e) < 0) {
    ioq_err_prefix(e, "memory.high %s", val);
    return -1;
  }
  uint64_t got;
  if (read_value(cg, "memory.high", &got, e) < 0)
    return -1;
  if (readback)
    *readback = got;
  if (got != want)
    return ioq_fail(e, IOQ_EMISMATCH, "%s/memory.high: wrote %s, read back %" PRIu64, cg->dir, val, got);
  return 0;
}
