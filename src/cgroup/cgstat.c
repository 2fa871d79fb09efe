// SPDX-License-Identifier: Apache-2.0
/* I/O statistics and pressure of a cgroup (ioqosctl show, plugin metrics). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgfile.h"
#include "base/fsutil.h"

static struct ioq_iostat *slot(struct ioq_iostat *out, size_t max, size_t *n, struct ioq_devno d,
                               bool *full) {
  for (size_t i = 0; i < *n; i++)
    if (ioq_devno_eq(out[i].dev, d))
      return &out[i];
  if (*n >= max) {
    *full = true;
    return NULL;
  }
  memset(&out[*n], 0, sizeof out[*n]);
  out[*n].dev = d;
  return &out[(*n)++];
}

int ioq_iostat_parse_v2(const char *content, struct ioq_iostat *out, size_t max, size_t *n,
                        ioq_err *e) {
  *n = 0;
  bool full = false;
  char *copy = strdup(content);
  if (!copy)
    return ioq_fail(e, ENOMEM, "out of memory for a copy of io.stat");
  char *lsave = NULL;
  for (char *line = strtok_r(copy, "\n", &lsave); line; line = strtok_r(NULL, "\n", &lsave)) {
    char *tsave = NULL;
    char *dev = strtok_r(line, " \t", &tsave);
    struct ioq_devno d;
    if (!dev)
      continue;
    if (ioq_devno_parse(dev, &d, NULL) < 0) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "io.stat: unexpected line starting '%.60s'", dev);
      free(copy);
      return -1;
    }
    struct ioq_iostat *s = slot(out, max, n, d, &full);
    if (!s)
      continue;
    for (char *kv = strtok_r(NULL, " \t", &tsave); kv; kv = strtok_r(NULL, " \t", &tsave)) {
      char *eq = strchr(kv, '=');
      uint64_t v;
      if (!eq || ioq_parse_u64(eq + 1, &v) < 0)
        continue; /* io.latency / iocost add keys with other value forms */
      *eq = '\0';
      if (!strcmp(kv, "rbytes")) s->rbytes = v;
      else if (!strcmp(kv, "wbytes")) s->wbytes = v;
      else if (!strcmp(kv, "rios")) s->rios = v;
      else if (!strcmp(kv, "wios")) s->wios = v;
      else if (!strcmp(kv, "dbytes")) s->dbytes = v;
      else if (!strcmp(kv, "dios")) s->dios = v;
    }
  }
  free(copy);
  return 0;
}

/* v1: "8:16 Read 123\n8:16 Write 456\n...\nTotal 579" */
static int parse_v1(const char *content, bool bytes, struct ioq_iostat *out, size_t max,
                    size_t *n, ioq_err *e) {
  bool full = false;
  char *copy = strdup(content);
  if (!copy)
    return ioq_fail(e, ENOMEM, "out of memory for a copy of the blkio statistics");
  char *lsave = NULL;
  for (char *line = strtok_r(copy, "\n", &lsave); line; line = strtok_r(NULL, "\n", &lsave)) {
    char dev[32], op[32];
    uint64_t v;
    struct ioq_devno d;
    if (sscanf(line, "%31s %31s %" SCNu64, dev, op, &v) != 3 || ioq_devno_parse(dev, &d, NULL) < 0)
      continue; /* "Total N" */
    struct ioq_iostat *s = slot(out, max, n, d, &full);
    if (!s)
      continue;
    if (!strcmp(op, "Read"))
      *(bytes ? &s->rbytes : &s->rios) = v;
    else if (!strcmp(op, "Write"))
      *(bytes ? &s->wbytes : &s->wios) = v;
    else if (!strcmp(op, "Discard"))
      *(bytes ? &s->dbytes : &s->dios) = v;
  }
  free(copy);
  return 0;
}

int ioq_cg_read_iostat(const struct ioq_cg *cg, struct ioq_iostat *out, size_t max, size_t *n,
                       ioq_err *e) {
  *n = 0;
  char *c = NULL;
  int rc;
  if (cg->version == IOQ_CGV2) {
    if (ioq_cg_read(cg, "io.stat", &c, e) < 0)
      return -1;
    rc = ioq_iostat_parse_v2(c, out, max, n, e);
    free(c);
    return rc;
  }
  if (cg->version != IOQ_CGV1)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "cgroup version not set");
  if (ioq_cg_read(cg, "blkio.throttle.io_service_bytes_recursive", &c, e) < 0)
    return -1;
  rc = parse_v1(c, true, out, max, n, e);
  free(c);
  if (rc < 0 || ioq_cg_read(cg, "blkio.throttle.io_serviced_recursive", &c, e) < 0)
    return -1;
  rc = parse_v1(c, false, out, max, n, e);
  free(c);
  return rc;
}

int ioq_pressure_parse(const char *content, struct ioq_pressure *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  bool some = false;
  char *copy = strdup(content);
  if (!copy)
    return ioq_fail(e, ENOMEM, "out of memory for a copy of io.pressure");
  char *lsave = NULL;
  for (char *line = strtok_r(copy, "\n", &lsave); line; line = strtok_r(NULL, "\n", &lsave)) {
    char kind[8];
    struct ioq_pressure_line p;
    if (sscanf(line, "%7s avg10=%lf avg60=%lf avg300=%lf total=%" SCNu64, kind, &p.avg10,
               &p.avg60, &p.avg300, &p.total_us) != 5) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "io.pressure: unexpected line '%.80s'", line);
      free(copy);
      return -1;
    }
    if (!strcmp(kind, "some")) {
      out->some = p;
      some = true;
    } else if (!strcmp(kind, "full")) {
      out->full = p;
      out->has_full = true;
    }
  }
  free(copy);
  if (!some)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "io.pressure: no 'some' line");
  return 0;
}

int ioq_cg_read_pressure(const struct ioq_cg *cg, struct ioq_pressure *out, ioq_err *e) {
  if (cg->version != IOQ_CGV2)
    return ioq_fail(e, IOQ_EUNSUPPORTED, "I/O pressure (PSI) per cgroup exists on cgroup v2 only");
  if (!ioq_cg_has(cg, "io.pressure"))
    return ioq_fail(e, IOQ_EUNSUPPORTED,
                    "%s has no io.pressure (kernel without PSI, or booted with psi=0)", cg->dir);
  char *c = NULL;
  if (ioq_cg_read(cg, "io.pressure", &c, e) < 0)
    return -1;
  int rc = ioq_pressure_parse(c, out, e);
  free(c);
  if (rc < 0)
    ioq_err_prefix(e, "%s", cg->dir);
  return rc;
}
