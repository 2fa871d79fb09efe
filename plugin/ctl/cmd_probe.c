/* PLACEHOLDER until the node core lands. */
#include <stdio.h>
#include "commands.h"
int cmd_probe(int argc, char **argv) { (void)argc; fprintf(stderr, "%s: not built yet\n", argv[0]); return 1; }
