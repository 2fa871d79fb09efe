// SPDX-License-Identifier: Apache-2.0
/* ioqosctl: inspect and drive ioqos on one node. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

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
    {"explain", cmd_explain, "why a pod is limited or not: its grant, disk, cgroup, files, events"},
};

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
