// SPDX-License-Identifier: Apache-2.0
/* ioqosctl: inspect and drive ioqos on one node. Invoked as kubectl-ioqos
 * (the same binary under a second name: a kubectl plugin), it serves the
 * cluster-wide commands only, as `kubectl ioqos nodes|pods`. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "util.h"

#define KUBECTL_NAME "kubectl-ioqos"

static const struct {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;
} g_cmds[] = {
    {"probe", cmd_probe, "report managed disks, how they were resolved, capabilities, capacity and units"},
    {"calibrate", cmd_calibrate, "measure a disk's bandwidth and IOPS with direct I/O on a temp file"},
    {"cgroup-path", cmd_cgroup_path, "print the pod cgroup directory kubelet uses for a pod"},
    {"apply", cmd_apply, "write io limits/weight into a cgroup and show the kernel's read-back"},
    {"show", cmd_show, "show limits in place, io.stat and pressure of a cgroup"},
    {"nodes", cmd_knodes, "cluster (kubeconfig): every node's disks, capacity, free, health = kubectl ioqos nodes"},
    {"pods", cmd_kpods, "cluster (kubeconfig): ioqos pods, their units, disk and grant = kubectl ioqos pods"},
    {"explain", cmd_explain, "why a pod is limited or not: its grant, disk, cgroup, files, events"},
};

/* kubectl ioqos: the cluster-wide commands, under kubectl's naming */
static const struct {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;
} g_kcmds[] = {
    {"nodes", cmd_knodes, "every node's ioqos disks: class, capacity, allocated, free, health"},
    {"pods", cmd_kpods, "ioqos pods: requested units, class, disk and grant"},
};

static void kubectl_usage(FILE *f) {
  fprintf(f, "usage: kubectl ioqos COMMAND [OPTIONS]\n\n"
             "Disk I/O QoS (ioqos) state of the cluster, from the annotations its plugin and\n"
             "scheduler extender write, read with your kubeconfig.\n\n"
             "Commands:\n");
  for (size_t i = 0; i < sizeof g_kcmds / sizeof g_kcmds[0]; i++)
    fprintf(f, "  %-8s %s\n", g_kcmds[i].name, g_kcmds[i].summary);
  fprintf(f, "\nRun 'kubectl ioqos COMMAND --help' for the options of a command.\n"
             "The node commands (probe, calibrate, ...) are ioqosctl's, on the node.\n");
}

static int kubectl_main(int argc, char **argv) {
  ctl_prog = "kubectl ioqos";
  if (argc < 2) {
    kubectl_usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    kubectl_usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf(KUBECTL_NAME " " IOQOS_VERSION "\n");
    return 0;
  }
  for (size_t i = 0; i < sizeof g_kcmds / sizeof g_kcmds[0]; i++)
    if (strcmp(argv[1], g_kcmds[i].name) == 0)
      return g_kcmds[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "kubectl ioqos: unknown command '%s'\n\n", argv[1]);
  kubectl_usage(stderr);
  return 2;
}

static void usage(FILE *f) {
  fprintf(f, "usage: ioqosctl COMMAND [OPTIONS]\n\n"
             "Inspect and drive ioqos (disk I/O QoS for Kubernetes) on this node.\n\n"
             "Commands:\n");
  for (size_t i = 0; i < sizeof g_cmds / sizeof g_cmds[0]; i++)
    fprintf(f, "  %-12s %s\n", g_cmds[i].name, g_cmds[i].summary);
  fprintf(f, "\nRun 'ioqosctl COMMAND --help' for the options of a command,\n"
             "'ioqosctl --version' for the version.\n");
}

int main(int argc, char **argv) {
  const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
  base = base ? base + 1 : argc > 0 && argv[0] ? argv[0] : "";
  if (strcmp(base, KUBECTL_NAME) == 0)
    return kubectl_main(argc, argv);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("ioqosctl " IOQOS_VERSION "\n");
    return 0;
  }
  for (size_t i = 0; i < sizeof g_cmds / sizeof g_cmds[0]; i++)
    if (strcmp(argv[1], g_cmds[i].name) == 0)
      return g_cmds[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "ioqosctl: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
