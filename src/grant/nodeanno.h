// SPDX-License-Identifier: Apache-2.0
/* Codec for the node annotation `ioqos.io/devices` that the plugin publishes
 * and the extender reads (docs/annotations.md):
 *
 * {"version":1,"node":"node-a",
 *  "units":{"ioqos/bandwidth":1048576,"ioqos/iops":100},
 *  "devices":[{"name":"nvme0n1","dev":"259:0","class":"default","healthy":true,
 *    "capacity":{"ioqos/bandwidth":2000,"ioqos/iops":500},
 *    "allocated":{"ioqos/bandwidth":350,"ioqos/iops":0},
 *    "capabilities":["io.max","io.weight"],
 *    "ungrantedPool":{"bytesPerSecond":41943040,"iops":10240}},
 *   {"name":"sdb","dev":"8:16","class":"default","healthy":false,
 *    "reason":"capacity of sdb: /var/lib/ioqos/calibration.json: not a JSON object ...", ...}],
 *  "pods":["8f0c...-uid", ...],
 *  "faults":[{"select":"/mnt/gone","reason":"config.json: devices[2].select '/mnt/gone': ..."}],
 *  "publishedAt":"2026-12-01T02:38:15Z"}
 *
 * units: bytes/s per bandwidth unit and IOPS per iops unit; capacity and
 * allocated are in advertised units. pods (optional) lists the UIDs of the
 * pods whose units `allocated` counts, so the extender can forget a placement
 * it assumed as soon as the node reports it. ungrantedPool (optional, only
 * while pods hold units of the disk) is what pods without a grant share
 * there, in bytes/s and IOPS (0 = not bounded). publishedAt (optional: plugins
 * before it do not write it) is when the plugin built the value, UTC to the
 * second; the plugin refreshes it at least every IOQ_NODE_ANNO_REFRESH_S, so
 * a reader can tell a stale annotation (the plugin is gone) from a fresh one.
 * reason (only on an unhealthy disk) and faults (configured selectors that
 * give no disk; optional) are for people reading the node: the parser never
 * fails on them, so extenders of any version read the annotation as before;
 * it keeps a string reason of an unhealthy disk (cut to fit, for kubectl
 * ioqos nodes) and skips faults. Unknown fields and unknown capability names
 * are ignored (forward compatible); missing or mistyped known fields are
 * errors that name the field.
 */
#ifndef IOQOS_NODEANNO_H
#define IOQOS_NODEANNO_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/disk.h"
#include "base/error.h"
#include "grant/placement.h"

#define IOQ_NODE_ANNOTATION "ioqos.io/devices"
#define IOQ_POD_DISK_ANNOTATION "ioqos.io/disk"
#define IOQ_POD_CLASS_ANNOTATION "ioqos.io/class"
/* "true": the pod asks for the opt-in burst (nodePolicy.ungranted.burst annotated) */
#define IOQ_POD_BURST_ANNOTATION "ioqos.io/burst"
#define IOQ_NODE_ANNO_VERSION 1
#define IOQ_NODE_NAME_MAX 253
#define IOQ_POD_UID_STR_MAX 64
/* the plugin republishes an unchanged annotation this often (publishedAt) */
#define IOQ_NODE_ANNO_REFRESH_S 300

struct ioq_node_state {
  int version;
  char node[IOQ_NODE_NAME_MAX + 1];
  struct ioq_unit_sizes units;
  struct ioq_disk_state *disks;
  size_t n_disks;
  char (*pods)[IOQ_POD_UID_STR_MAX + 1]; /* UIDs of the pods counted in allocated */
  size_t n_pods;
  int64_t published_at; /* unix seconds; 0: no publishedAt (older plugin) */
  /* written, never parsed: selectors that give no disk (not owned) */
  const struct ioq_select_fault *faults;
  size_t n_faults;
  /* written, never parsed: what the node exports over NVMe-oF
   * (ioq_nvmet_json), NULL = nothing to say; borrowed */
  json_object *nvmet;
};

/* Parses annotation text (len bytes, need not be NUL-terminated). */
IOQ_MUST_CHECK
int ioq_node_anno_parse(const char *text, size_t len, struct ioq_node_state *out, ioq_err *e);
/* Serialises to compact JSON (malloc'd, caller frees); NULL on OOM. */
char *ioq_node_anno_format(const struct ioq_node_state *s);
void ioq_node_state_free(struct ioq_node_state *s);

#endif
