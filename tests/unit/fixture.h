// SPDX-License-Identifier: Apache-2.0
/* Test fixtures: temporary directory trees that stand in for sysfs,
 * cgroupfs, procfs and kubelet directories, so every path resolution and
 * file format is tested without root. */
#ifndef IOQOS_TEST_FIXTURE_H
#define IOQOS_TEST_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

/* Creates a fresh temp directory; returns its path (static storage per call
 * is NOT used: the returned string is malloc'd). */
char *fx_tmpdir(void);
/* rm -rf of a fixture tree (refuses paths outside /tmp). */
void fx_rmtree(const char *path);
/* Writes a file at root/rel (parents created); content may be "". */
void fx_write(const char *root, const char *rel, const char *content);
/* Creates a directory root/rel (with parents). */
void fx_mkdir(const char *root, const char *rel);
/* Creates a symlink root/rel -> target (target taken literally). */
void fx_symlink(const char *root, const char *rel, const char *target);
/* A file that swallows writes and reads back empty, as a cgroup file the
 * kernel ignores: a character device 1:3 (/dev/null's) at root/rel. The
 * writers refuse symlinks (O_NOFOLLOW), so a link to /dev/null will not do.
 * false when creating device nodes is not permitted (not root): skip then. */
bool fx_swallower(const char *root, const char *rel);
/* Reads root/rel into a malloc'd string (aborts the test on failure). */
char *fx_read(const char *root, const char *rel);
/* Formats into a static rotating buffer (8 slots) for short-lived paths. */
const char *fx_path(const char *root, const char *rel);

/* ---- sysfs block devices (under ROOT/sys) ----
 * fx_sys_disk: a whole disk at ROOT/sys/devices/virtual/block/NAME with dev,
 *   queue/{scheduler,rotational,logical_block_size}, plus the class/block and
 *   dev/block symlinks the kernel provides. sched is the full line, e.g.
 *   "mq-deadline kyber [bfq] none".
 * fx_sys_part: partition PART of DISK (dev, partition; no queue/).
 * fx_sys_slave: NAME's slaves/ gets an entry for LOWER (dm/md stacks).
 * fx_sys_dm_name: dm/name of a dm device. */
void fx_sys_disk(const char *root, const char *name, const char *majmin, const char *sched,
                 int rotational);
void fx_sys_part(const char *root, const char *disk, const char *part, const char *majmin, int partno);
void fx_sys_slave(const char *root, const char *name, const char *lower);
void fx_sys_dm_name(const char *root, const char *dm, const char *dm_name);

/* Criterion note: parameterized-test parameter structs must not contain
 * pointers (each test runs in a fresh process); use fixed char arrays. */

#endif
