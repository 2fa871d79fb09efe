#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the extender under valgrind for the leak-checking ctest run
# (IOQOS_EXT_WRAPPER): any memory error or definite/indirect leak makes the
# process exit 99, which the test harness reports with the log.
exec valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --log-fd=2 "$@"
