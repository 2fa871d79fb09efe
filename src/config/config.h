// SPDX-License-Identifier: Apache-2.0
/* Node configuration: a YAML or JSON file (see docs/configuration.md),
 * validated alike (duplicate keys and the value budget included).
 * A disk without a class is in class "default" (IOQ_DEFAULT_CLASS), the class
 * every pod without the ioqos.io/class annotation asks for.
 *
 * No file means a working default: one managed disk, the one behind the
 * kubelet root directory, in class "default", capacity from io.cost.model or
 * a saved calibration. Validation is strict: unknown fields, wrong types and
 * out-of-range values are errors naming the file, the field path and what is
 * wrong ("config.json: devices[1].capacity.iops: must be a positive integer").
 */
#ifndef IOQOS_CONFIG_H
#define IOQOS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/error.h"
#include "units/iolimit.h"
#include "units/units.h"

#define IOQ_DEFAULT_CLASS "default"
#define IOQ_DEFAULT_KUBELET_ROOT "/var/lib/kubelet"
#define IOQ_DEFAULT_CALIBRATION_FILE "/var/lib/ioqos/calibration.json"
#define IOQ_DEFAULT_ALLOCATABLE_FRACTION 0.8
#define IOQ_CLASS_NAME_MAX 63
/* the versioned header of a configuration file */
#define IOQ_CONFIG_API_VERSION "ioqos.io/v1alpha1"
#define IOQ_CONFIG_KIND "NodeConfiguration"
#define IOQ_CONFIG_MAX_POOLS 32
/* keys and values of a YAML file: a full file (32 pools of 256 disks with
 * every field) stays below it; json-c's parse of the same text in JSON has
 * no such budget, only the 4 MiB file cap */
#define IOQ_CONFIG_MAX_NODES 200000
#define IOQ_DEFAULT_UNGRANTED_INTERVAL_MS 1000
#define IOQ_DEFAULT_UNGRANTED_HEADROOM_SHARE 0.5
#define IOQ_DEFAULT_UNGRANTED_LEND_RESERVE 0.125
#define IOQ_DEFAULT_UNGRANTED_LEND_SAMPLE_MS 50
#define IOQ_DEFAULT_UNGRANTED_PAGE_CACHE_BYTES (64ull << 20)
#define IOQ_UNGRANTED_PAGE_CACHE_MIN (8ull << 20)
#define IOQ_DEFAULT_IOCOST_PACE_LATENCY_US 2000u
/* enforcement.combinedDirectionsFloor: the floor each direction keeps of a
 * split grant, as a fraction of the grant (grant/dirsplit.h uses it as
 * DIRSPLIT_FLOOR_DEFAULT) */
#define IOQ_COMBINED_FLOOR_DEFAULT 0.03
/* nvmet: the cgroup (below the cgroup2 root) that holds one cgroup per
 * configured NVMe-oF namespace, and how many entries namespaces[] may have */
#define IOQ_DEFAULT_NVMET_PARENT "ioqos-nvmet.slice"
#define IOQ_CONFIG_MAX_NVMET_NS 256
#define IOQ_NVMET_NQN_MAX 223 /* NVMe: an NQN is at most 223 bytes */

enum ioq_policy { IOQ_POLICY_LEAST_ALLOCATED = 0, IOQ_POLICY_MOST_ALLOCATED, IOQ_POLICY_BALANCED };
const char *ioq_policy_name(enum ioq_policy p);
int ioq_policy_parse(const char *s, enum ioq_policy *out);

/* nodePolicy.ungranted.burst: off (default), annotated (pods annotated
 * ioqos.io/burst: "true"), all (every granted pod) */
enum ioq_ug_burst_mode { IOQ_UG_BURST_OFF = 0, IOQ_UG_BURST_ANNOTATED, IOQ_UG_BURST_ALL };
const char *ioq_ug_burst_mode_name(enum ioq_ug_burst_mode m);

struct ioq_device_config {
  char *select; /* disk name ("nvme0n1"), /dev path, mount point, or "MAJ:MIN" */
  char *class_name;
  /* capacity overrides; 0 = not set (use io.cost.model or calibration) */
  uint64_t capacity_bw_bytes; /* bytes/s */
  uint64_t capacity_iops;
  double allocatable_fraction; /* < 0 = use the node-wide value */
  /* the pool of pods without a grant on this disk; 0 = derived (capacity
   * minus the units pods hold), see ungranted.h */
  uint64_t ungranted_pool_bw_bytes, ungranted_pool_iops;
};

/* One entry of nvmet.namespaces[]: which NVMe-oF target namespaces, and
 * what each of them gets on the disk its I/O lands on (docs/operations.md,
 * "Storage nodes"). Either units (grant, like a pod's) or raw io.max values
 * (limits); the disk's units a namespace takes are not advertised to pods. */
struct ioq_nvmet_ns_config {
  char *subsystem; /* the subsystem's NQN */
  uint32_t nsid;   /* 0 = every namespace of the subsystem */
  bool raw;        /* limits given (bytes/s, IOPS), not units */
  uint64_t units[IOQ_RES_COUNT]; /* !raw: bandwidth and IOPS units, 0 = not limited */
  struct ioq_io_limits limits;   /* raw: 0 = not limited (max) */
  unsigned weight; /* io.weight 1..10000; 0 = from the share, as for a pod */
};

struct ioq_config {
  char *source; /* file path, or "(built-in defaults)" */
  bool versioned; /* the file has apiVersion and kind */
  size_t n_pools; /* entries of pools[]: the node's labels select one */
  char *pool;     /* the pool this config is for (its name or "pools[N]"); NULL = top level */
  size_t pool_index; /* with pool: its index in pools[] (names need not be unique) */
  char *kubelet_root;
  char *calibration_file;
  struct ioq_unit_sizes units;
  double allocatable_fraction; /* (0, 1] */
  enum ioq_policy policy;

  struct ioq_device_config *devices; /* empty = the kubelet root disk */
  size_t n_devices;

  struct {
    bool fail_open;           /* PreStart failure lets the container run unthrottled */
    bool io_weight;           /* write io.weight (v2) from the pod's share */
    bool bfq_weight;          /* write io.bfq.weight / blkio.bfq.weight when BFQ runs */
    bool enable_controllers;  /* enable io (+memory) in ancestors' subtree_control */
    unsigned reconcile_interval_s;
    /* re-split rbps/wbps and riops/wiops of each grant from demand so that
     * read + write <= the grant (dirsplit.h); needs the grant monitor */
    bool combined_directions;
    double combined_floor; /* per direction, fraction of the grant, (0, 0.25] */
  } enforcement;

  /* The grant monitor (plugin/daemon/core/monitor.h, grant/grantmon.h): is every
   * grant being kept? On by default. */
  struct {
    bool enable;
    unsigned interval_s;        /* one io.stat + io.pressure read per granted pod this often */
    unsigned starved_window_s;  /* starved this long: Warning IoqosGrantNotMet */
    unsigned event_interval_s;  /* at most one IoqosGrantNotMet per pod this often (0 = no limit) */
  } monitor;

  /* Opt-in, node-wide (DESIGN "Enforcement semantics"). */
  struct {
    /* io.weight / io.bfq.weight (v2) or blkio.bfq.weight (v1) of the
     * Burstable and BestEffort QoS cgroups on every managed disk, e.g. a low
     * BestEffort weight; 0 = leave untouched. (Guaranteed pods have no QoS
     * cgroup of their own: they sit directly in kubepods.) */
    unsigned weight_burstable, weight_besteffort;
    /* io.cost.qos of the root cgroup for every managed disk (v2 only):
     * enable=1 with ctrl=user and min/max (percent of the cost model's rate,
     * 1..10000) makes weights hold under saturation; ctrl=auto has been seen
     * to cause soft lockups. latency_us: rlat=wlat target at the 95th
     * percentile (0 = keep the kernel's). */
    bool iocost_enable;
    bool iocost_ctrl_user;
    double iocost_min, iocost_max;
    unsigned iocost_latency_us;
    /* (0, 1], 0 = unset: io.cost.model of each managed disk written as this
     * fraction of its capacity, so iocost paces the disk below what it can
     * do (token-bucket disks: issue 18); needs enable and ctrl=user.
     * iocost_pace_auto ("pace: auto", iocost_pace 0 then): each disk at the
     * part of its capacity that grants and the pool of pods without a grant
     * may take together (ioq_ug_bounded_fraction in ungranted.h). */
    double iocost_pace;
    bool iocost_pace_auto;
    /* bounds for pods without a grant on a disk where grants exist
     * (ungranted.h); on by default */
    bool ungranted_enable;
    unsigned ungranted_interval_ms; /* demand measured and pool re-split this often */
    double ungranted_headroom_share; /* (0, 1]: of the part a disk does not advertise */
    /* the idle part of grants added to the pool (ungranted.h, "Lending"):
     * each lender keeps lend_reserve of its grant; lenders' io.stat is
     * sampled every lend_sample_ms while something is lent */
    bool ungranted_lend;
    double ungranted_lend_reserve;
    unsigned ungranted_lend_sample_ms;
    /* memory.high of pods without a grant (cgroup v2, pods without a
     * memory limit): their page cache beyond their other memory, and so the
     * dirty pages they can hold behind their cap (ioq_ug_page_cache_high in
     * grant/ungranted.h); 0 = not bounded */
    uint64_t ungranted_page_cache_bytes;
    /* opt-in burst (grant/ungranted.h, "Burst"): which granted pods may use
     * idle capacity above their grant, last in line after pods without a
     * grant; needs ungranted_enable. IOQ_UG_BURST_OFF by default: grants
     * stay limits. */
    enum ioq_ug_burst_mode ungranted_burst;
  } node_policy;

  /* NVMe-oF target namespaces as QoS consumers (nvmetns.c in the plugin):
   * nothing happens without entries. */
  struct {
    char *parent; /* below the cgroup2 root: IOQ_DEFAULT_NVMET_PARENT */
    /* disable an enabled namespace to set its cgroup_id, then enable it
     * again (initiators see the namespace go away); false: wait until the
     * namespace is seen disabled */
    bool allow_namespace_restart;
    struct ioq_nvmet_ns_config *ns; /* in file order: the first entry matching a namespace wins */
    size_t n;
  } nvmet;
};

/* Device class names (config devices[].class, pod annotation ioqos.io/class):
 * 1-63 characters of a-z, 0-9, '-' and '.', not starting or ending with '-',
 * and neither "." nor "..". */
bool ioq_class_name_valid(const char *s);
/* Why `s` cannot be nvmet.parent (a relative cgroup path of
 * [A-Za-z0-9._@:-] components, none "." or "..", not in kubepods), or
 * NULL when it can. */
const char *ioq_nvmet_parent_problem(const char *s);
/* What is wrong with `s` as a subsystem name (its configfs directory and
 * the start of its cgroup's name): 1-223 characters, no '/', spaces or
 * control characters, not "." or ".."; NULL when nothing is. */
const char *ioq_nvmet_nqn_problem(const char *s);

/* Fills *c with defaults (no devices). */
IOQ_MUST_CHECK
int ioq_config_defaults(struct ioq_config *c, ioq_err *e);
/* Loads and validates a file. path NULL = defaults only. The top level
 * only: a file with pools (n_pools > 0) is loaded again with the node's
 * labels by ioq_config_load_node. Warns (log) when the file has no
 * apiVersion/kind. */
IOQ_MUST_CHECK
int ioq_config_load(const char *path, struct ioq_config *c, ioq_err *e);
/* The same for a node with these labels (a JSON object of strings, NULL =
 * none): the first pool whose nodeSelector.matchLabels all match replaces the
 * top-level sections it sets; no match = the top level. Every pool is
 * validated either way. */
IOQ_MUST_CHECK
int ioq_config_load_node(const char *path, json_object *node_labels, struct ioq_config *c,
                         ioq_err *e);
/* Parses text, YAML or JSON: by the extension of `source` (.yaml/.yml,
 * .json), else by content (JSON starts with '{'). `source` names it in error
 * messages ("SOURCE: line N: FIELD.PATH: what", in both syntaxes). */
IOQ_MUST_CHECK
int ioq_config_parse(const char *text, const char *source, struct ioq_config *c, ioq_err *e);
IOQ_MUST_CHECK
int ioq_config_parse_node(const char *text, const char *source, json_object *node_labels,
                          struct ioq_config *c, ioq_err *e);
void ioq_config_free(struct ioq_config *c);

/* Whether the plugin writes io.cost.model itself (pace set, number or auto). */
bool ioq_config_paces(const struct ioq_config *c);

#endif
