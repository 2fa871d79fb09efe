/* PLACEHOLDER until the enforcement core lands (replaced by its owner). */
#include <stdio.h>
#include "commands.h"
static int nyi(const char *c) { fprintf(stderr, "ioqosctl %s: not built yet\n", c); return 1; }
int cmd_cgroup_path(int argc, char **argv) { (void)argc; return nyi(argv[0]); }
int cmd_apply(int argc, char **argv) { (void)argc; return nyi(argv[0]); }
int cmd_show(int argc, char **argv) { (void)argc; return nyi(argv[0]); }
