// SPDX-License-Identifier: Apache-2.0
/* ioqosctl cgroup-path | apply | show: the enforcement core by hand. They
 * call the same resolver and writer the plugin daemon uses. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvmet/nvmet.h"
#include "commands.h"
#include "cgroup/cglayout.h"
#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "cgroup/podcg.h"
#include "units/units.h"
#include "util.h"

#define DEFAULT_CGROUPFS "/sys/fs/cgroup"

static int fail(const char *cmd, const ioq_err *e) {
  fprintf(stderr, "ioqosctl %s: %s\n", cmd, e->msg);
  return 1;
}

static int parse_version(const char *cmd, const char *s, enum ioq_cg_version *out) {
  if (strcmp(s, "1") == 0)
    *out = IOQ_CGV1;
  else if (strcmp(s, "2") == 0)
    *out = IOQ_CGV2;
  else
    return ctl_usage_error(cmd, "--cgroup-version: '%s' is not 1 or 2", s);
  return 0;
}

/* ---- cgroup-path -------------------------------------------------------- */

static void path_help(FILE *f) {
  fprintf(f,
          "usage: ioqosctl cgroup-path --qos CLASS --uid UID [--driver auto|systemd|cgroupfs]\n"
          "                            [--kubelet-cgroup-root R] [--cgroup-version 1|2]\n"
          "                            [--cgroupfs-root DIR] [--expected]\n\n"
          "Prints the pod cgroup directory, named as kubelet names it.\n\n"
          "  --qos CLASS          Guaranteed, Burstable or BestEffort (the pod's status.qosClass)\n"
          "  --uid UID            the pod's metadata.uid\n"
          "  --driver D           kubelet's cgroup driver (default auto: whichever layout exists)\n"
          "  --kubelet-cgroup-root R  kubelet's --cgroup-root (default /; the former\n"
          "                       spelling --cgroup-root still works, deprecated)\n"
          "  --cgroup-version V   1 or 2 (default: detected under --cgroupfs-root)\n"
          "  --cgroupfs-root DIR  where cgroup hierarchies are mounted (default %s)\n"
          "  --expected           print the derived path without looking for it (needs --driver)\n\n"
          "If the derived directory does not exist, the kubepods subtree is searched for the UID\n"
          "(a warning says so). Exit status: 0 found, 1 not found or error, 2 usage.\n",
          DEFAULT_CGROUPFS);
}

int cmd_cgroup_path(int argc, char **argv) {
  const char *cmd = "cgroup-path";
  static const struct option opts[] = {
      {"driver", required_argument, NULL, 'd'}, {"qos", required_argument, NULL, 'q'},
      {"uid", required_argument, NULL, 'u'},
      {"kubelet-cgroup-root", required_argument, NULL, 'r'},
      /* former spelling: --cgroup-root is the cgroupfs mount in the plugin */
      {"cgroup-root", required_argument, NULL, 'R'},
      {"cgroup-version", required_argument, NULL, 'V'},
      {"cgroupfs-root", required_argument, NULL, 'C'},
      {"expected", no_argument, NULL, 'x'},     {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *qos_s = NULL, *uid = NULL, *root = IOQ_DEFAULT_KUBELET_CGROUP_ROOT,
             *cgfs = DEFAULT_CGROUPFS;
  enum ioq_cg_driver driver = IOQ_CG_DRIVER_AUTO;
  enum ioq_cg_version ver = IOQ_CGV_NONE;
  bool expected = false;
  ioq_err e = {0};
  int c;
  optind = 1;
  while ((c = ctl_getopt(argc, argv, "h", opts, cmd)) != -1) {
    switch (c) {
    case 'd':
      if (ioq_cg_driver_parse(optarg, &driver, &e) < 0)
        return ctl_usage_error(cmd, "--driver: %s", e.msg);
      break;
    case 'q': qos_s = optarg; break;
    case 'u': uid = optarg; break;
    case 'R':
      ctl_deprecated(cmd, "--cgroup-root", "--kubelet-cgroup-root");
      /* fall through */
    case 'r': root = optarg; break;
    case 'V':
      if (parse_version(cmd, optarg, &ver))
        return 2;
      break;
    case 'C': cgfs = optarg; break;
    case 'x': expected = true; break;
    case 'h': path_help(stdout); return 0;
    default: return 2;
    }
  }
  if (optind < argc)
    return ctl_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  if (!qos_s || !uid)
    return ctl_usage_error(cmd, "--qos and --uid are required");
  enum ioq_qos_class qos;
  if (ioq_qos_parse(qos_s, &qos, &e) < 0)
    return ctl_usage_error(cmd, "--qos: %s", e.msg);
  if (ioq_pod_uid_check(uid, &e) < 0)
    return ctl_usage_error(cmd, "--uid: %s", e.msg);
  if (expected && driver == IOQ_CG_DRIVER_AUTO)
    return ctl_usage_error(cmd, "--expected needs --driver systemd or cgroupfs");

  struct ioq_cg_layout *l = malloc(sizeof *l);
  if (!l)
    return 1;
  int rc = ver == IOQ_CGV_NONE ? ioq_cg_layout_detect(cgfs, l, &e) : ioq_cg_layout_for(cgfs, ver, l, &e);
  if (rc == 0 && expected) {
    char name[PATH_MAX], dir[PATH_MAX];
    rc = ioq_pod_cgroup_name(driver, root, qos, uid, name, sizeof name, &e);
    if (rc == 0)
      rc = ioq_path_join(dir, sizeof dir, &e, l->io_root, name, NULL);
    if (rc == 0)
      printf("%s\n", dir);
  } else if (rc == 0) {
    struct ioq_pod_cgroup *pc = malloc(sizeof *pc);
    rc = pc ? ioq_pod_cgroup_resolve(l, driver, root, qos, uid, pc, &e) : -1;
    if (rc == 0)
      printf("%s\n", pc->dir);
    free(pc);
  }
  free(l);
  return rc == 0 ? 0 : fail(cmd, &e);
}

/* ---- apply -------------------------------------------------------------- */

static void apply_help(FILE *f) {
  fprintf(f,
          "usage: ioqosctl apply --cgroup DIR --device MAJ:MIN [--rbps N] [--wbps N]\n"
          "                      [--riops N] [--wiops N] [--weight W] [--bfq-weight W]\n"
          "                      [--clear] [--dry-run] [--sysfs-root DIR] [--cgroup-version 1|2]\n\n"
          "Writes I/O limits and weights for one whole disk into a cgroup with the ioqos writer,\n"
          "reads every file back and prints what was written and what the kernel holds.\n"
          "Limits not given keep their current value.\n\n"
          "  --rbps/--wbps N      bytes/s (a number or a quantity like 200Mi), or max for no limit\n"
          "  --riops/--wiops N    I/O operations per second, or max\n"
          "  --weight W           io.weight 1..10000 (cgroup v2; per device, else the cgroup-wide\n"
          "                       default where the kernel rejects the per-device form)\n"
          "  --bfq-weight W       1..1000, written when the disk runs the BFQ scheduler\n"
          "                       (io.bfq.weight / blkio.bfq.weight_device)\n"
          "  --clear              remove this cgroup's limits and device weights for the disk\n"
          "  --dry-run            compare and print, write nothing\n"
          "  --sysfs-root DIR     sysfs for the whole-disk check and the scheduler (default /sys)\n"
          "  --cgroup-version V   1 or 2 (default: detected from the files in DIR)\n");
}

static int parse_limit(const char *cmd, const char *flag, const char *val, uint64_t *out) {
  if (strcmp(val, "max") == 0) {
    *out = 0;
    return 0;
  }
  ioq_err e = {0};
  if (ioq_parse_quantity_int(val, out, &e) < 0)
    return ctl_usage_error(cmd, "%s: %s", flag, e.msg);
  if (*out == 0)
    return ctl_usage_error(cmd, "%s: 0 is not a limit the kernel accepts; use max for no limit",
                           flag);
  return 0;
}

static void print_report(const struct ioq_apply_report *rep, bool dry) {
  for (size_t i = 0; i < rep->n; i++) {
    const struct ioq_apply_step *s = &rep->steps[i];
    printf("  %s:\n", s->file);
    if (s->note[0])
      printf("    note:      %s\n", s->note);
    if (s->changed && dry) {
      printf("    now:       %s\n", s->before[0] ? s->before : "(none)");
      printf("    would write %s\n", s->written);
    } else if (s->changed) {
      printf("    was:       %s\n", s->before[0] ? s->before : "(none)");
      printf("    wrote:     %s\n", s->written);
      printf("    read back: %s\n", s->readback[0] ? s->readback : "(none: no limit, default weight)");
    } else if (!s->note[0] || s->readback[0] || s->before[0]) {
      printf("    unchanged: %s\n", s->readback[0] ? s->readback : "(none)");
    }
  }
}

int cmd_apply(int argc, char **argv) {
  const char *cmd = "apply";
  static const struct option opts[] = {
      {"cgroup", required_argument, NULL, 'c'},  {"device", required_argument, NULL, 'D'},
      {"rbps", required_argument, NULL, 'R'},    {"wbps", required_argument, NULL, 'W'},
      {"riops", required_argument, NULL, 'i'},   {"wiops", required_argument, NULL, 'o'},
      {"weight", required_argument, NULL, 'w'},  {"bfq-weight", required_argument, NULL, 'b'},
      {"clear", no_argument, NULL, 'X'},         {"dry-run", no_argument, NULL, 'n'},
      {"sysfs-root", required_argument, NULL, 's'},
      {"cgroup-version", required_argument, NULL, 'V'},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  const char *dir = NULL, *dev_s = NULL;
  struct ioq_apply_opts ao = {.sysfs_root = "/sys"};
  enum ioq_cg_version ver = IOQ_CGV_NONE;
  struct ioq_io_limits given = {0};
  bool have[IOQ_LIMIT_KEYS] = {false}, clear = false;
  uint64_t weight = 0, bfq = 0;
  int c;
  optind = 1;
  while ((c = ctl_getopt(argc, argv, "h", opts, cmd)) != -1) {
    enum ioq_limit_key k;
    uint64_t v;
    switch (c) {
    case 'c': dir = optarg; break;
    case 'D': dev_s = optarg; break;
    case 'R': k = IOQ_RBPS; goto lim;
    case 'W': k = IOQ_WBPS; goto lim;
    case 'i': k = IOQ_RIOPS; goto lim;
    case 'o':
      k = IOQ_WIOPS;
    lim: {
      char flag[16];
      snprintf(flag, sizeof flag, "--%s", ioq_limit_key_name(k));
      if (parse_limit(cmd, flag, optarg, &v))
        return 2;
    }
      ioq_limits_set(&given, k, v);
      have[k] = true;
      break;
    case 'w':
      if (ctl_parse_u64(cmd, "--weight", optarg, IOQ_IO_WEIGHT_MIN, IOQ_IO_WEIGHT_MAX, &weight) < 0)
        return 2;
      break;
    case 'b':
      if (ctl_parse_u64(cmd, "--bfq-weight", optarg, IOQ_BFQ_WEIGHT_MIN, IOQ_BFQ_WEIGHT_MAX, &bfq) < 0)
        return 2;
      break;
    case 'X': clear = true; break;
    case 'n': ao.dry_run = true; break;
    case 's': ao.sysfs_root = optarg; break;
    case 'V':
      if (parse_version(cmd, optarg, &ver))
        return 2;
      break;
    case 'h': apply_help(stdout); return 0;
    default: return 2;
    }
  }
  if (optind < argc)
    return ctl_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  if (!dir || !dev_s)
    return ctl_usage_error(cmd, "--cgroup and --device are required");
  ioq_err e = {0};
  struct ioq_disk_setting s = {0};
  if (ioq_devno_parse(dev_s, &s.dev, &e) < 0)
    return ctl_usage_error(cmd, "--device: %s", e.msg);
  bool any = weight || bfq;
  for (int k = 0; k < IOQ_LIMIT_KEYS; k++)
    any = any || have[k];
  if (clear && any)
    return ctl_usage_error(cmd, "--clear takes no limits or weights");
  if (!clear && !any)
    return ctl_usage_error(cmd, "nothing to apply: give limits, weights or --clear");

  struct ioq_cg cg;
  if (ioq_cg_open(dir, ver, &cg, &e) < 0)
    return fail(cmd, &e);
  /* The report below is the output; keep the writer's info lines out of it. */
  if (ioq_log_get_level() == IOQ_LOG_INFO)
    ioq_log_set_level(IOQ_LOG_WARN);
  struct ioq_apply_report rep;
  int rc;
  if (clear) {
    rc = ioq_cg_clear_disk(&cg, s.dev, &ao, &rep, &e);
  } else {
    /* Limits not given keep their value: start from what is in place. */
    struct ioq_disk_state_cg cur;
    if (ioq_cg_read_disk(&cg, s.dev, &cur, &e) < 0)
      return fail(cmd, &e);
    s.max = cur.max;
    for (int k = 0; k < IOQ_LIMIT_KEYS; k++)
      if (have[k])
        ioq_limits_set(&s.max, k, ioq_limits_get(&given, k));
    s.weight = (unsigned)weight;
    s.bfq_weight = (unsigned)bfq;
    rc = ioq_cg_apply_disk(&cg, &s, &ao, &rep, &e);
  }
  if (rc < 0)
    return fail(cmd, &e);
  char dv[IOQ_DEVNO_STR_MAX];
  printf("%s%s %s (cgroup v%d), device %s%s%s%s\n", ao.dry_run ? "dry run: " : "",
         clear ? "cleared" : "applied", cg.dir, cg.version == IOQ_CGV2 ? 2 : 1,
         ioq_devno_str(s.dev, dv, sizeof dv), rep.disk[0] ? " (" : "", rep.disk,
         rep.disk[0] ? ")" : "");
  print_report(&rep, ao.dry_run);
  return 0;
}

/* ---- show --------------------------------------------------------------- */

static void show_help(FILE *f) {
  fprintf(f, "usage: ioqosctl show --cgroup DIR [--cgroup-version 1|2]\n\n"
             "Shows the I/O limits and weights in place in a cgroup (the kernel's own lines),\n"
             "its I/O statistics per device and its I/O pressure (cgroup v2).\n");
}

static void show_file(const struct ioq_cg *cg, const char *name) {
  char p[PATH_MAX], *c = NULL;
  ioq_err e = {0};
  if (ioq_path_join(p, sizeof p, &e, cg->dir, name, NULL) < 0 || !ioq_path_exists(p))
    return;
  if (ioq_read_file(p, &c, NULL, 0, &e) < 0) {
    printf("  %s: %s\n", name, e.msg);
    return;
  }
  ioq_trim(c);
  printf("  %s:%s", name, *c ? "\n" : " (empty: no limits)\n");
  char *save = NULL;
  for (char *l = strtok_r(c, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    printf("    %s\n", l);
  free(c);
}

int cmd_show(int argc, char **argv) {
  const char *cmd = "show";
  static const struct option opts[] = {{"cgroup", required_argument, NULL, 'c'},
                                       {"cgroup-version", required_argument, NULL, 'V'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *dir = NULL;
  enum ioq_cg_version ver = IOQ_CGV_NONE;
  int c;
  optind = 1;
  while ((c = ctl_getopt(argc, argv, "h", opts, cmd)) != -1) {
    switch (c) {
    case 'c': dir = optarg; break;
    case 'V':
      if (parse_version(cmd, optarg, &ver))
        return 2;
      break;
    case 'h': show_help(stdout); return 0;
    default: return 2;
    }
  }
  if (optind < argc)
    return ctl_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  if (!dir)
    return ctl_usage_error(cmd, "--cgroup is required");
  ioq_err e = {0};
  struct ioq_cg cg;
  if (ioq_cg_open(dir, ver, &cg, &e) < 0)
    return fail(cmd, &e);
  uint64_t cgid = 0;
  ioq_err ie;
  /* on cgroup v2 the kernel's cgroup ID (what nvmet's namespace cgroup_id
   * takes, nvmet/nvmet.h) */
  if (cg.version == IOQ_CGV2 && ioq_cgroup_id(cg.dir, &cgid, &ie) == 0)
    printf("cgroup %s (cgroup v2, id %" PRIu64 ")\n", cg.dir, cgid);
  else
    printf("cgroup %s (cgroup v%d)\n", cg.dir, cg.version == IOQ_CGV2 ? 2 : 1);
  printf("limits and weights:\n");
  static const char *const v2files[] = {"io.max", "io.weight", "io.bfq.weight", "io.latency"};
  static const char *const v1files[] = {
      "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
      "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device",
      "blkio.bfq.weight",               "blkio.bfq.weight_device"};
  const char *const *files = cg.version == IOQ_CGV2 ? v2files : v1files;
  size_t nf = cg.version == IOQ_CGV2 ? sizeof v2files / sizeof *v2files : sizeof v1files / sizeof *v1files;
  for (size_t i = 0; i < nf; i++)
    show_file(&cg, files[i]);
  if (cg.version == IOQ_CGV2) {
    char p[PATH_MAX];
    if (ioq_path_join(p, sizeof p, &e, cg.dir, "io.max", NULL) == 0 && !ioq_path_exists(p))
      printf("  (no io.max: the io controller is not enabled for this cgroup)\n");
  }

  struct ioq_iostat st[64];
  size_t n = 0;
  printf("io statistics%s:\n", cg.version == IOQ_CGV1 ? " (blkio.throttle.*_recursive)" : " (io.stat)");
  if (ioq_cg_read_iostat(&cg, st, 64, &n, &e) < 0) {
    printf("  unavailable: %s\n", e.msg);
  } else if (n == 0) {
    printf("  no I/O yet\n");
  } else {
    for (size_t i = 0; i < n; i++) {
      char dv[IOQ_DEVNO_STR_MAX];
      printf("  %s rbytes=%" PRIu64 " wbytes=%" PRIu64 " rios=%" PRIu64 " wios=%" PRIu64
             " dbytes=%" PRIu64 " dios=%" PRIu64 "\n",
             ioq_devno_str(st[i].dev, dv, sizeof dv), st[i].rbytes, st[i].wbytes, st[i].rios,
             st[i].wios, st[i].dbytes, st[i].dios);
    }
  }
  struct ioq_pressure pr;
  printf("io pressure:\n");
  if (ioq_cg_read_pressure(&cg, &pr, &e) < 0) {
    printf("  unavailable: %s\n", e.msg);
  } else {
    printf("  some avg10=%.2f avg60=%.2f avg300=%.2f total=%" PRIu64 "us\n", pr.some.avg10,
           pr.some.avg60, pr.some.avg300, pr.some.total_us);
    if (pr.has_full)
      printf("  full avg10=%.2f avg60=%.2f avg300=%.2f total=%" PRIu64 "us\n", pr.full.avg10,
             pr.full.avg60, pr.full.avg300, pr.full.total_us);
  }
  return 0;
}
