// SPDX-License-Identifier: Apache-2.0
/* ioqosctl subcommands; each returns the process exit status
 * (0 ok, 1 operation failed, 2 usage error). argv[0] is the subcommand. */
#ifndef IOQOSCTL_COMMANDS_H
#define IOQOSCTL_COMMANDS_H

int cmd_probe(int argc, char **argv);       /* cmd_probe.c */
int cmd_calibrate(int argc, char **argv);   /* cmd_calibrate.c */
int cmd_cgroup_path(int argc, char **argv); /* cmd_cgroup.c */
int cmd_apply(int argc, char **argv);       /* cmd_cgroup.c */
int cmd_show(int argc, char **argv);        /* cmd_cgroup.c */
int cmd_knodes(int argc, char **argv);      /* cmd_kubectl.c: nodes (kubectl ioqos nodes) */
int cmd_kpods(int argc, char **argv);       /* cmd_kubectl.c: pods (kubectl ioqos pods) */
int cmd_explain(int argc, char **argv);     /* cmd_explain.c */

#endif
