// SPDX-License-Identifier: Apache-2.0
#include "cgroup/iocost.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"

#define IOCOST_PCT 95.0

int ioq_iocost_qos_parse(const char *content, struct ioq_devno dev, struct ioq_iocost_qos *out,
                         bool *present, ioq_err *e) {
  memset(out, 0, sizeof *out);
  *present = false;
  char line[512];
  ioq_dev_line(content, dev, line, sizeof line);
  if (!line[0])
    return 0;
  *present = true;
  char devs[32];
  char *save;
  for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
    char *eq = strchr(t, '=');
    if (!eq)
      continue; /* the leading MAJ:MIN */
    *eq = '\0';
    const char *k = t, *v = eq + 1;
    char *end;
    if (strcmp(k, "enable") == 0) {
      out->enable = strcmp(v, "1") == 0;
    } else if (strcmp(k, "ctrl") == 0) {
      out->ctrl_user = strcmp(v, "user") == 0;
    } else if (strcmp(k, "min") == 0 || strcmp(k, "max") == 0) {
      double d = strtod(v, &end);
      if (*end || !isfinite(d))
        return ioq_fail(e, IOQ_EINVAL_INPUT, "io.cost.qos line for %s: bad %s '%s'",
                        ioq_devno_str(dev, devs, sizeof devs), k, v);
      if (k[1] == 'i')
        out->min = d;
      else
        out->max = d;
    } else if (strcmp(k, "rlat") == 0) {
      unsigned long u = strtoul(v, &end, 10);
      if (*end)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "io.cost.qos line for %s: bad rlat '%s'",
                        ioq_devno_str(dev, devs, sizeof devs), v);
      out->latency_us = (unsigned)u;
    }
  }
  return 0;
}

int ioq_iocost_qos_format(char *out, size_t outsz, struct ioq_devno dev,
                          const struct ioq_iocost_qos *w, ioq_err *e) {
  char devs[32];
  ioq_devno_str(dev, devs, sizeof devs);
  int n;
  if (!w->enable)
    n = snprintf(out, outsz, "%s enable=0", devs);
  else if (!w->ctrl_user)
    n = snprintf(out, outsz, "%s enable=1 ctrl=auto", devs);
  else if (w->latency_us)
    n = snprintf(out, outsz,
                 "%s enable=1 ctrl=user rpct=%.2f rlat=%u wpct=%.2f wlat=%u min=%.2f max=%.2f",
                 devs, IOCOST_PCT, w->latency_us, IOCOST_PCT, w->latency_us, w->min, w->max);
  else
    n = snprintf(out, outsz, "%s enable=1 ctrl=user min=%.2f max=%.2f", devs, w->min, w->max);
  if (n < 0 || (size_t)n >= outsz)
    return ioq_fail(e, ENAMETOOLONG, "io.cost.qos line too long");
  return 0;
}

/* what the kernel holds satisfies `want` (fields that want leaves open are
 * not compared) */
static bool holds(const struct ioq_iocost_qos *have, const struct ioq_iocost_qos *want) {
  if (have->enable != want->enable)
    return false;
  if (!want->enable)
    return true;
  if (have->ctrl_user != want->ctrl_user)
    return false;
  if (!want->ctrl_user)
    return true;
  if (fabs(have->min - want->min) > 0.005 || fabs(have->max - want->max) > 0.005)
    return false;
  return !want->latency_us || have->latency_us == want->latency_us;
}

static int read_state(const char *file, struct ioq_devno dev, struct ioq_iocost_qos *st,
                      bool *present, char *raw, size_t rawsz, ioq_err *e) {
  char *content;
  if (ioq_read_file(file, &content, NULL, 0, e) < 0)
    return -1;
  ioq_dev_line(content, dev, raw, rawsz);
  int rc = ioq_iocost_qos_parse(content, dev, st, present, e);
  free(content);
  return rc;
}

/* The root cgroup's iocost file for an apply (which starts as "nothing
 * written"); IOQ_EUNSUPPORTED when the kernel has none. */
static int root_file(const char *root, const char *name, char file[PATH_MAX], bool *changed,
                     char *written, size_t writtensz, ioq_err *e) {
  *changed = false;
  if (written && writtensz)
    written[0] = '\0';
  if (ioq_path_join(file, PATH_MAX, e, root, name, NULL) < 0)
    return -1;
  if (!ioq_path_exists(file))
    return ioq_fail(e, IOQ_EUNSUPPORTED, "%s does not exist: the kernel has no iocost "
                    "(CONFIG_BLK_CGROUP_IOCOST), or %s is not the cgroup v2 root", file, root);
  return 0;
}

int ioq_iocost_qos_apply(const char *root, struct ioq_devno dev, const struct ioq_iocost_qos *want,
                         bool *changed, char *written, size_t writtensz, ioq_err *e) {
  char file[PATH_MAX];
  if (root_file(root, "io.cost.qos", file, changed, written, writtensz, e) < 0)
    return -1;
  if (want->enable && want->ctrl_user &&
      (want->min < 1 || want->max > 10000 || want->min > want->max))
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "iocost min %.2f / max %.2f: want 1 <= min <= max <= 10000", want->min,
                    want->max);
  struct ioq_iocost_qos have;
  bool present;
  char raw[512];
  if (read_state(file, dev, &have, &present, raw, sizeof raw, e) < 0)
    return -1;
  if ((present || !want->enable) && holds(&have, want))
    return 0;
  char line[256];
  if (ioq_iocost_qos_format(line, sizeof line, dev, want, e) < 0)
    return -1;
  if (ioq_write_file(file, line, e) < 0)
    return -1;
  *changed = true;
  if (written) /* for display: a cut line is fine */
    ioq_copy_trunc(written, writtensz, line);
  if (read_state(file, dev, &have, &present, raw, sizeof raw, e) < 0)
    return -1;
  if (!present || !holds(&have, want))
    return ioq_fail(e, IOQ_EMISMATCH, "%s: wrote '%s', read back '%s'", file, line,
                    present ? raw : "(no line for the disk)");
  return 0;
}

/* ---- io.cost.model ---- */

static const char *const g_model_keys[IOQ_COST_N] = {"rbps", "rseqiops", "rrandiops",
                                                     "wbps", "wseqiops", "wrandiops"};

int ioq_iocost_coefs_parse(const char *content, struct ioq_devno dev, struct ioq_iocost_coefs *out,
                           bool *present, ioq_err *e) {
  memset(out, 0, sizeof *out);
  *present = false;
  char line[512], devs[32];
  ioq_dev_line(content, dev, line, sizeof line);
  if (!line[0])
    return 0;
  *present = true;
  char *save;
  for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
    char *eq = strchr(t, '=');
    if (!eq)
      continue; /* the leading MAJ:MIN */
    *eq = '\0';
    if (strcmp(t, "ctrl") == 0)
      out->user = strcmp(eq + 1, "user") == 0;
    for (int i = 0; i < IOQ_COST_N; i++) {
      if (strcmp(t, g_model_keys[i]) != 0)
        continue;
      if (ioq_parse_u64(eq + 1, &out->v[i]) < 0)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "io.cost.model line for %s: bad value '%s=%s'",
                        ioq_devno_str(dev, devs, sizeof devs), t, eq + 1);
      out->have |= 1u << i;
    }
  }
  return 0;
}

int ioq_iocost_model_parse(const char *content, struct ioq_devno dev, struct ioq_iocost_model *out,
                           bool *user, bool *present, ioq_err *e) {
  memset(out, 0, sizeof *out);
  *user = false;
  struct ioq_iocost_coefs c;
  if (ioq_iocost_coefs_parse(content, dev, &c, present, e) < 0)
    return -1;
  const uint64_t *v = c.v;
  /* ours: both directions the same bandwidth, every IOPS coefficient the same */
  if (c.user && v[IOQ_COST_RBPS] && v[IOQ_COST_RBPS] == v[IOQ_COST_WBPS] && v[IOQ_COST_RSEQIOPS] &&
      v[IOQ_COST_RSEQIOPS] == v[IOQ_COST_RRANDIOPS] &&
      v[IOQ_COST_RSEQIOPS] == v[IOQ_COST_WSEQIOPS] &&
      v[IOQ_COST_RSEQIOPS] == v[IOQ_COST_WRANDIOPS]) {
    *user = true;
    out->bps = v[IOQ_COST_RBPS];
    out->iops = v[IOQ_COST_RSEQIOPS];
  }
  return 0;
}

int ioq_iocost_model_format(char *out, size_t outsz, struct ioq_devno dev,
                            const struct ioq_iocost_model *w, ioq_err *e) {
  if (!w->bps || !w->iops)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "io.cost.model: bandwidth and IOPS must be > 0");
  char devs[32];
  ioq_devno_str(dev, devs, sizeof devs);
  unsigned long long b = w->bps, i = w->iops;
  int n = snprintf(out, outsz,
                   "%s ctrl=user model=linear rbps=%llu rseqiops=%llu rrandiops=%llu wbps=%llu "
                   "wseqiops=%llu wrandiops=%llu",
                   devs, b, i, i, b, i, i);
  if (n < 0 || (size_t)n >= outsz)
    return ioq_fail(e, ENAMETOOLONG, "io.cost.model line too long");
  return 0;
}

static int read_model(const char *file, struct ioq_devno dev, struct ioq_iocost_model *m,
                      bool *user, char *raw, size_t rawsz, ioq_err *e) {
  char *content;
  bool present;
  if (ioq_read_file(file, &content, NULL, 0, e) < 0)
    return -1;
  ioq_dev_line(content, dev, raw, rawsz);
  int rc = ioq_iocost_model_parse(content, dev, m, user, &present, e);
  free(content);
  return rc;
}

int ioq_iocost_model_apply(const char *root, struct ioq_devno dev,
                           const struct ioq_iocost_model *want, bool *changed, char *written,
                           size_t writtensz, ioq_err *e) {
  char file[PATH_MAX];
  if (root_file(root, "io.cost.model", file, changed, written, writtensz, e) < 0)
    return -1;
  char line[256], raw[512];
  if (ioq_iocost_model_format(line, sizeof line, dev, want, e) < 0)
    return -1;
  struct ioq_iocost_model have;
  bool user;
  if (read_model(file, dev, &have, &user, raw, sizeof raw, e) < 0)
    return -1;
  if (user && have.bps == want->bps && have.iops == want->iops)
    return 0;
  if (ioq_write_file(file, line, e) < 0)
    return -1;
  *changed = true;
  if (written) /* for display: a cut line is fine */
    ioq_copy_trunc(written, writtensz, line);
  if (read_model(file, dev, &have, &user, raw, sizeof raw, e) < 0)
    return -1;
  if (!user || have.bps != want->bps || have.iops != want->iops)
    return ioq_fail(e, IOQ_EMISMATCH, "%s: wrote '%s', read back '%s'", file, line,
                    raw[0] ? raw : "(no line for the disk)");
  return 0;
}
