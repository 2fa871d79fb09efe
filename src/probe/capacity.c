// SPDX-License-Identifier: Apache-2.0
#include "probe/capacity.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "cgroup/iocost.h"
#include "base/numconv.h"
#include "cgroup/caps.h"

static int cal_bad(ioq_err *e, const char *file, const char *disk, const char *field) {
  return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: disks.%s.%s: missing or not a non-negative integer",
                  file, disk, field);
}

static int get_u64(json_object *o, const char *k, uint64_t *out) {
  json_object *v;
  if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
    return -1;
  int64_t n = json_object_get_int64(v);
  if (n < 0)
    return -1;
  *out = (uint64_t)n;
  return 0;
}

/* Copies string field k (absent: left empty); false when it does not fit. */
static bool get_str(json_object *o, const char *k, char *out, size_t outsz) {
  json_object *v;
  if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string))
    return ioq_copy(out, outsz, json_object_get_string(v));
  return true;
}

static int str_too_long(ioq_err *e, const char *file, const char *disk, const char *field,
                        size_t max) {
  return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: disks.%s.%s: longer than %zu characters", file, disk,
                  field, max);
}

static int load_root(const char *file, json_object **root, ioq_err *e) {
  *root = NULL;
  if (!ioq_path_exists(file))
    return 1;
  char *text;
  if (ioq_read_file(file, &text, NULL, 4u << 20, e) < 0)
    return -1;
  json_object *j = json_tokener_parse(text);
  free(text);
  json_object *disks, *ver;
  if (!j || !json_object_is_type(j, json_type_object)) {
    json_object_put(j);
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "%s: not a JSON object (delete it and run ioqosctl calibrate again)", file);
  }
  if (!json_object_object_get_ex(j, "version", &ver) ||
      json_object_get_int(ver) != IOQ_CALIBRATION_VERSION) {
    json_object_put(j);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: version must be %d", file, IOQ_CALIBRATION_VERSION);
  }
  if (!json_object_object_get_ex(j, "disks", &disks) ||
      !json_object_is_type(disks, json_type_object)) {
    json_object_put(j);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: disks must be an object", file);
  }
  *root = j;
  return 0;
}

int ioq_calibration_load(const char *file, const char *disk, struct ioq_calibration *out,
                         ioq_err *e) {
  memset(out, 0, sizeof *out);
  json_object *root;
  int rc = load_root(file, &root, e);
  if (rc != 0)
    return rc;
  json_object *disks, *d;
  json_object_object_get_ex(root, "disks", &disks);
  if (!json_object_object_get_ex(disks, disk, &d)) {
    json_object_put(root);
    return 1;
  }
  rc = -1;
  if (!json_object_is_type(d, json_type_object)) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "%s: disks.%s must be an object", file, disk);
    goto out;
  }
  if (!ioq_copy(out->disk, sizeof out->disk, disk)) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "%s: disk name %s longer than %zu characters", file, disk,
             sizeof out->disk - 1);
    goto out;
  }
  if (!get_str(d, "dev", out->dev, sizeof out->dev)) {
    str_too_long(e, file, disk, "dev", sizeof out->dev - 1);
    goto out;
  }
  if (!get_str(d, "measuredAt", out->measured_at, sizeof out->measured_at)) {
    str_too_long(e, file, disk, "measuredAt", sizeof out->measured_at - 1);
    goto out;
  }
  if (!get_str(d, "dir", out->dir, sizeof out->dir)) {
    str_too_long(e, file, disk, "dir", sizeof out->dir - 1);
    goto out;
  }
  uint64_t secs = 0;
  get_u64(d, "seconds", &secs);
  out->seconds = (unsigned)secs;
  if (get_u64(d, "seqReadBytesPerSec", &out->seq_read_bps) < 0) {
    cal_bad(e, file, disk, "seqReadBytesPerSec");
    goto out;
  }
  if (get_u64(d, "seqWriteBytesPerSec", &out->seq_write_bps) < 0) {
    cal_bad(e, file, disk, "seqWriteBytesPerSec");
    goto out;
  }
  if (get_u64(d, "randReadIops", &out->rand_read_iops) < 0) {
    cal_bad(e, file, disk, "randReadIops");
    goto out;
  }
  if (get_u64(d, "randWriteIops", &out->rand_write_iops) < 0) {
    cal_bad(e, file, disk, "randWriteIops");
    goto out;
  }
  rc = 0;
out:
  json_object_put(root);
  return rc;
}

int ioq_calibration_save(const char *file, const struct ioq_calibration *c, ioq_err *e) {
  json_object *root;
  int rc = load_root(file, &root, e);
  if (rc < 0)
    return -1;
  if (rc == 1) {
    root = json_object_new_object();
    json_object_object_add(root, "version", json_object_new_int(IOQ_CALIBRATION_VERSION));
    json_object_object_add(root, "disks", json_object_new_object());
  }
  json_object *disks;
  json_object_object_get_ex(root, "disks", &disks);
  json_object *d = json_object_new_object();
  json_object_object_add(d, "dev", json_object_new_string(c->dev));
  json_object_object_add(d, "measuredAt", json_object_new_string(c->measured_at));
  json_object_object_add(d, "dir", json_object_new_string(c->dir));
  json_object_object_add(d, "seconds", json_object_new_int64(c->seconds));
  json_object_object_add(d, "seqReadBytesPerSec", json_object_new_int64((int64_t)c->seq_read_bps));
  json_object_object_add(d, "seqWriteBytesPerSec",
                         json_object_new_int64((int64_t)c->seq_write_bps));
  json_object_object_add(d, "randReadIops", json_object_new_int64((int64_t)c->rand_read_iops));
  json_object_object_add(d, "randWriteIops", json_object_new_int64((int64_t)c->rand_write_iops));
  json_object_object_add(disks, c->disk, d);
  const char *txt = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE);
  char *withnl;
  if (asprintf(&withnl, "%s\n", txt) < 0) {
    json_object_put(root);
    return ioq_fail(e, ENOMEM, "out of memory for the calibration file text of %s", file);
  }
  rc = ioq_write_file_atomic(file, withnl, e);
  free(withnl);
  json_object_put(root);
  return rc;
}

int ioq_cost_model_parse(const char *content, unsigned major, unsigned minor, uint64_t *bw,
                         uint64_t *iops, ioq_err *e) {
  struct ioq_iocost_coefs c;
  bool present;
  if (ioq_iocost_coefs_parse(content, (struct ioq_devno){major, minor}, &c, &present, e) < 0)
    return -1;
  if (!present || !c.user)
    return 1; /* no line, or the kernel's automatic model: not a measured capacity */
  const unsigned need = 1u << IOQ_COST_RBPS | 1u << IOQ_COST_WBPS | 1u << IOQ_COST_RRANDIOPS |
                        1u << IOQ_COST_WRANDIOPS;
  if ((c.have & need) != need)
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "io.cost.model line for %u:%u lacks rbps/wbps/rrandiops/wrandiops", major,
                    minor);
  const uint64_t *v = c.v;
  *bw = v[IOQ_COST_RBPS] < v[IOQ_COST_WBPS] ? v[IOQ_COST_RBPS] : v[IOQ_COST_WBPS];
  *iops = v[IOQ_COST_RRANDIOPS] < v[IOQ_COST_WRANDIOPS] ? v[IOQ_COST_RRANDIOPS]
                                                        : v[IOQ_COST_WRANDIOPS];
  return 0;
}

int ioq_capacity_resolve(const struct ioq_config *cfg, const struct ioq_device_config *devcfg,
                         const char *cost_model, struct ioq_disk *d, ioq_err *e) {
  d->capacity_bw_bytes = d->capacity_iops = 0;
  d->capacity_source[0] = '\0';
  d->ungranted_pool_bw_bytes = d->ungranted_pool_iops = 0;
  d->ungranted_note[0] = '\0';
  d->allocatable_fraction = devcfg && devcfg->allocatable_fraction > 0
                                ? devcfg->allocatable_fraction
                                : cfg->allocatable_fraction;

  uint64_t bw = 0, iops = 0;
  const char *src = NULL;
  char srcbuf[sizeof d->capacity_source];
  if (devcfg && (devcfg->capacity_bw_bytes || devcfg->capacity_iops)) {
    bw = devcfg->capacity_bw_bytes;
    iops = devcfg->capacity_iops;
    snprintf(srcbuf, sizeof srcbuf, "config %s", cfg->source);
    src = srcbuf;
  }
  /* with nodePolicy.iocost.pace the plugin writes the model itself (a fraction
   * of this capacity): reading it back as the capacity would shrink it on
   * every probe */
  bool model_is_ours = ioq_config_paces(cfg);
  if (!src && !model_is_ours && cost_model && *cost_model && ioq_path_exists(cost_model)) {
    char *content;
    if (ioq_read_file(cost_model, &content, NULL, 0, e) < 0)
      return -1;
    int rc = ioq_cost_model_parse(content, d->dev.major, d->dev.minor, &bw, &iops, e);
    free(content);
    if (rc < 0)
      return -1;
    if (rc == 0) {
      snprintf(srcbuf, sizeof srcbuf, "io.cost.model (ctrl=user)");
      src = srcbuf;
    }
  }
  if (!src) {
    struct ioq_calibration cal;
    int rc = ioq_calibration_load(cfg->calibration_file, d->dev.name, &cal, e);
    if (rc < 0)
      return -1;
    char dev[24];
    snprintf(dev, sizeof dev, "%u:%u", d->dev.major, d->dev.minor);
    if (rc == 0 && cal.dev[0] && strcmp(cal.dev, dev) != 0) {
      snprintf(d->capacity_source, sizeof d->capacity_source,
               "none: calibration in %.60s is for %s=%s, now %s (disk changed? recalibrate)",
               cfg->calibration_file, d->dev.name, cal.dev, dev);
    } else if (rc == 0) {
      bw = cal.seq_read_bps < cal.seq_write_bps ? cal.seq_read_bps : cal.seq_write_bps;
      iops = cal.rand_read_iops < cal.rand_write_iops ? cal.rand_read_iops : cal.rand_write_iops;
      snprintf(srcbuf, sizeof srcbuf, "calibration %.80s (%s)", cfg->calibration_file,
               cal.measured_at);
      src = srcbuf;
    }
  }
  if (!src) {
    if (!d->capacity_source[0] && model_is_ours)
      snprintf(d->capacity_source, sizeof d->capacity_source,
               "none: set devices[].capacity or run 'ioqosctl calibrate' on %s "
               "(io.cost.model is not read: nodePolicy.iocost.pace writes it)",
               d->dev.name);
    else if (!d->capacity_source[0])
      snprintf(d->capacity_source, sizeof d->capacity_source,
               "none: set devices[].capacity in the config or run 'ioqosctl calibrate --dir DIR' "
               "with DIR on %s",
               d->dev.name);
    d->units[IOQ_RES_BANDWIDTH] = d->units[IOQ_RES_IOPS] = 0;
    return 0;
  }
  ioq_copy_trunc(d->capacity_source, sizeof d->capacity_source, src); /* shown to the operator */
  d->capacity_bw_bytes = bw;
  d->capacity_iops = iops;
  /* a cost model line may say rbps=18446744073709551615: checked, not cast */
  uint64_t raw[IOQ_RES_COUNT] = {[IOQ_RES_BANDWIDTH] = bw, [IOQ_RES_IOPS] = iops};
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    char what[96];
    snprintf(what, sizeof what, "%s units from %s", ioq_resource_short(r), d->capacity_source);
    if (ioq_u64_from_double(
            floor((double)raw[r] * d->allocatable_fraction / (double)cfg->units.size[r]), what,
            &d->units[r], e) < 0)
      return -1;
    /* more units than one ListAndWatch message should carry (units.h):
     * advertise the bound and say so; a larger unit size fixes it */
    if (d->units[r] > IOQ_MAX_UNITS_PER_DISK) {
      size_t l = strlen(d->capacity_source);
      snprintf(d->capacity_source + l, sizeof d->capacity_source - l,
               "; %llu %s units capped at %u (raise units.%s)", (unsigned long long)d->units[r],
               ioq_resource_short(r), IOQ_MAX_UNITS_PER_DISK, r ? "iops" : "bandwidthBytesPerSec");
      d->units[r] = IOQ_MAX_UNITS_PER_DISK;
    }
  }
  if (devcfg) {
    /* a pool the config cannot check against a measured capacity is
     * checked here: cut to the disk, and said (probe, plugin log) */
    d->ungranted_pool_bw_bytes = devcfg->ungranted_pool_bw_bytes;
    d->ungranted_pool_iops = devcfg->ungranted_pool_iops;
    uint64_t *pool[2] = {&d->ungranted_pool_bw_bytes, &d->ungranted_pool_iops}, cap[2] = {bw, iops};
    static const char *const field[2] = {"bandwidthBytesPerSec", "iops"};
    for (int r = 0; r < 2; r++)
      if (cap[r] && *pool[r] > cap[r]) {
        snprintf(d->ungranted_note, sizeof d->ungranted_note,
                 "ungrantedPool.%s %llu is larger than the disk (%llu, %s): cut to it", field[r],
                 (unsigned long long)*pool[r], (unsigned long long)cap[r], d->capacity_source);
        *pool[r] = cap[r];
      }
  }
  return 0;
}
