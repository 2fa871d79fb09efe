// SPDX-License-Identifier: Apache-2.0
/* The per-node decision shared by filter, prioritize and bind: the node's
 * published state minus what this extender has assumed there, placed with
 * the one placement function (ioq_place) the plugin also uses. */
#ifndef IOQOS_EXT_DECIDE_H
#define IOQOS_EXT_DECIDE_H

#include "assumed.h"
#include "config/config.h"
#include "grant/placement.h"
#include "nodeinfo.h"

enum ext_verdict_kind {
  EXT_FITS = 0,
  EXT_FAILED,       /* may fit later (units free up, a disk heals) */
  EXT_UNRESOLVABLE, /* no state, unknown node, or no disk of the class at all */
};

struct ext_verdict {
  enum ext_verdict_kind kind;
  int disk;  /* index into ni->st.disks when it fits */
  int score; /* 0..10 when it fits */
  char reason[512];
};

/* The ID a pod's assumed placement is kept under: its UID, else
 * "namespace/name" (written to buf). */
struct ioq_pod_need;
const char *ext_assume_id(const struct ioq_pod_need *pn, char *buf, size_t bufsz);

/* ni NULL = a node the extender does not know. self (may be NULL): the
 * pod's assumption ID (UID, else namespace/name), whose own assumed
 * placement does not count against it. */
void ext_decide(struct ext_assumed *a, enum ioq_policy policy, const struct ioq_need *need,
                const char *self, const char *name, const struct ext_nodeinfo *ni,
                struct ext_verdict *out);

/* A node annotation whose publishedAt is more than max_age_s seconds old is
 * stale: its plugin stopped publishing (it refreshes every
 * IOQ_NODE_ANNO_REFRESH_S), so its units say nothing about the node now and
 * the node is unresolvable. 0 = never stale. now (NULL = time()) is the
 * wall clock, for tests. Set once before requests are served. An
 * annotation without publishedAt (a plugin older than the marker) is taken
 * as it is: refusing it would make every node unschedulable while plugins
 * are upgraded after the extender. */
void ext_decide_set_max_age(unsigned max_age_s, int64_t (*now)(void));

#endif
