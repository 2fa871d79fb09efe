// SPDX-License-Identifier: Apache-2.0
/* The pool of a disk for pods without a grant there, and how it is split.
 *
 * A grant is only as good as the bound on everyone else: pods that ask for
 * no ioqos units (most pods of a cluster) would otherwise take the disk from
 * the granted ones. So, on a disk where at least one pod holds units, every
 * other pod's cgroup gets an io.max share of one pool (per resource):
 *
 *   headroom = capacity - (advertised + NVMe-oF namespace units) x unit size
 *              (what the disk does not grant: capacity x (1 - fraction))
 *   pool     = headroom x headroomShare + units nobody holds x unit size
 *
 * or the pool configured for the disk (devices[].ungrantedPool). The other
 * (1 - headroomShare) of the headroom is never given to anyone: measured on
 * a token-bucket disk (null_blk), pods without a grant using all of it ran
 * the disk at 100 % and the latency-bound granted pod kept 0.38 of the
 * harness ceiling (p99 40 ms vs 21 ms); with half of it 0.59-0.65, close to
 * the grants alone (docs/ungranted.md). Grants plus pool stay below the
 * capacity by that reserve.
 *
 * Per-pod caps are what blk-throttle enforces per cgroup (a cap on a parent
 * is shared by its children in turns, not by grant, and Guaranteed pods sit
 * directly in kubepods, next to the granted ones), so the pool is split into
 * per-pod caps whose sum stays within it: a max-min fair split by demand,
 * measured from io.stat every interval.
 *  - A pod with no measurement yet (just created) counts as busy.
 *  - A pod that used >= IOQ_UG_BUSY_FRACTION of its cap counts as busy (it
 *    may want more than it was allowed).
 *  - Any other pod wants max(IOQ_UG_HEADROOM x its rate, pool / (4 N)):
 *    room to grow, and a quarter of an equal share so a pod waking up is
 *    not crawling until the next measurement.
 *  - Water-filling: the pods wanting least are served first; the busy ones
 *    share what is left equally. If everyone is served, what is left is
 *    spread equally over all pods.
 *  - No cap is below the floor (IOQ_UG_FLOOR_BPS, IOQ_UG_FLOOR_IOPS): a
 *    pod is slowed, never frozen. With more pods than pool / floor the caps
 *    together exceed the pool by the floors.
 * A pod that was bounded before (after a plugin restart) and has no
 * measurement yet wants its current cap: nothing moves until it is measured.
 *
 * Lending (nodePolicy.ungranted.lend): the part of a grant its pod does not
 * use is added to the pool while it stays unused, so pods without a grant
 * are not held to a few MiB/s of an idle disk. Per granted pod, disk and
 * resource a lender (struct ioq_ug_lender) keeps
 *   keep = max(lendReserve x grant, IOQ_UG_LEND_HEADROOM x its rate)
 * and lends grant - keep, once it was measured quiet (keep < grant) for
 * IOQ_UG_LEND_QUIET_PASSES passes in a row, in every resource it holds a
 * grant of (ioq_ug_lend_pass_pod). Between passes the daemon samples
 * the lenders' io.stat every lendSampleMs; a sample above what the lender
 * keeps takes its whole grant back at once (ioq_ug_lend_woke) and the pool is
 * cut before anything else is written. A lender that woke lends again only
 * after twice as many quiet passes per recent wake-up (up to
 * IOQ_UG_LEND_BACKOFF_MAX doublings), so a bursty pod does not make the pool
 * swing every interval. A grant is never cut: the granted pod's io.max stays
 * its grant; what is lent is what pods without a grant may use beside it.
 */
#ifndef IOQOS_UNGRANTED_H
#define IOQOS_UNGRANTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/disk.h"
#include "base/error.h"
#include "units/units.h"

#define IOQ_UG_BUSY_FRACTION 0.85
#define IOQ_UG_HEADROOM 1.5
#define IOQ_UG_FLOOR_BPS (1024ull * 1024ull)
#define IOQ_UG_FLOOR_IOPS 10ull

/* One pod's input to the split of one resource. */
struct ioq_ug_demand {
  uint64_t cap;  /* its cap now (0 = none) */
  double rate;   /* measured over the last interval (max of read and write); < 0 = not yet */
};

/* Splits `pool` between n pods; out[i] gets pod i's cap (>= floor). */
void ioq_ug_split(uint64_t pool, uint64_t floor, const struct ioq_ug_demand *in, size_t n,
                  uint64_t *out);

/* Burst (nodePolicy.ungranted.burst, opt-in): a granted pod allowed to burst
 * may use, above its grant, what the pods without a grant leave of the pool
 * (base + lent): it is last in line, and never below its grant.
 *  - The pods without a grant are split as above first. If one of them is
 *    busy (it shares what is left), no burster gets anything.
 *  - A burster wants nothing while not measured, without a grant in that
 *    resource, or using less than its grant / IOQ_UG_HEADROOM; it is busy at
 *    >= IOQ_UG_BUSY_FRACTION of grant + its extra now; else it wants
 *    IOQ_UG_HEADROOM x its rate - grant.
 *  - The bursters water-fill what the pods without a grant leave (the busy
 *    ones share the rest equally); only what they leave is spread over the
 *    pods without a grant.
 * So a pod without a grant whose demand grows is busy at its cap on the
 * next pass and takes the bursters' extra back; a waking lender cuts the
 * pool, and the extra with it, before anything else. */
struct ioq_ug_burster {
  uint64_t grant; /* per direction; 0: none in this resource (no burst) */
  uint64_t extra; /* above its grant now */
  double rate;    /* measured over the last interval (max of read and write); < 0 = not yet */
};
/* bout[j] gets burster j's extra (0: none); out as ioq_ug_split. */
void ioq_ug_split_burst(uint64_t pool, uint64_t floor, const struct ioq_ug_demand *in, size_t n,
                        const struct ioq_ug_burster *b, size_t nb, uint64_t *out, uint64_t *bout);

/* The pool of one disk per resource (0 = no pool: that resource is not
 * bounded, e.g. no IOPS capacity known). held: units pods hold on it;
 * headroom_share in (0, 1] (nodePolicy.ungranted.headroomShare). */
void ioq_ug_pool(const struct ioq_disk *d, const struct ioq_unit_sizes *u, double headroom_share,
                 const uint64_t held[IOQ_RES_COUNT], uint64_t pool[IOQ_RES_COUNT]);

#define IOQ_UG_LEND_HEADROOM 2.0
#define IOQ_UG_LEND_QUIET_PASSES 2u
#define IOQ_UG_LEND_BACKOFF_MAX 3u
/* lending passes without a wake-up after which earlier wake-ups are forgotten */
#define IOQ_UG_LEND_FORGET_PASSES 30u

/* One granted pod's grant in one resource on one disk, as a lender. Zeroed
 * = not lending. */
struct ioq_ug_lender {
  uint64_t grant;    /* per direction (0: none: lends nothing) */
  uint64_t keep;     /* what it keeps now: grant unless lending */
  unsigned quiet;    /* passes in a row measured with something to lend */
  unsigned wakes;    /* recent wake-ups (backoff) */
  unsigned calm;     /* passes lending since the last wake-up */
};

/* At a pass: the lender's grant now and its rate over the interval (< 0: not
 * measured; max of read and write); reserve in [0, 1] (lendReserve).
 * Returns what it lends now (grant - keep). A changed grant starts afresh. */
uint64_t ioq_ug_lend_pass(struct ioq_ug_lender *l, uint64_t grant, double rate, double reserve);

/* The same for a pod's grant in every resource (bandwidth, IOPS): a pod lends
 * only while it is quiet in each resource it holds a grant of, so a database
 * that uses its IOPS grant lends none of its bandwidth grant either (the disk
 * is one: a neighbour's bandwidth costs the database's IOPS). lent[r] gets
 * what it lends per resource. */
void ioq_ug_lend_pass_pod(struct ioq_ug_lender l[IOQ_RES_COUNT], const uint64_t grant[IOQ_RES_COUNT],
                          const double rate[IOQ_RES_COUNT], double reserve, uint64_t lent[IOQ_RES_COUNT]);

/* A buffered writer's I/O reaches io.stat only at writeback, and a stalled
 * writeback (behind others' I/O, the filesystem's journal) makes a busy pod
 * look idle. So a lender whose page cache waiting for the disk (memory.stat
 * file_dirty + file_writeback) is at least max(IOQ_UG_BACKLOG_MIN,
 * IOQ_UG_BACKLOG_S x its bandwidth grant) counts as busy whatever io.stat
 * says (measured: a granted buffered backup held up by the journal fell to
 * 0.1 of its grant and, looking idle, lent it away: docs/ungranted.md). */
#define IOQ_UG_BACKLOG_MIN (4ull * 1024 * 1024)
#define IOQ_UG_BACKLOG_S 0.05
bool ioq_ug_backlogged(uint64_t queued_bytes, uint64_t grant_bps);

/* The same for a pod whose tasks wait on I/O (io.pressure "some", PSI): a
 * stall of at least `fraction` of the time measured is demand, whatever
 * io.stat says; a buffered writer throttled while dirtying (its writeback
 * stuck behind others) stalls without I/O of its own reaching the disk, and
 * a latency-bound database waits on each I/O. An idle pod stalls ~0.
 * IOQ_UG_STALL_PASS at passes (whole intervals), IOQ_UG_STALL_SAMPLE at
 * samples. */
#define IOQ_UG_STALL_PASS 0.10
#define IOQ_UG_STALL_SAMPLE 0.25
bool ioq_ug_stalled(uint64_t stall_us, double seconds, double fraction);

/* A pod that owes the kernel (docs/ungranted.md "io.max after a cut").
 * blk-throttle in Debian's 6.1 kernel (6.1.192) carries what a group got
 * ahead of its limit across an io.max write (tg_update_carryover, when bios
 * are queued) in an unsigned field. A cut while the group is ahead by more
 * than one slice (100 ms at HZ=250) of the new limit makes the sum "allowed
 * + carried" wrap to a huge number: the group's I/O passes unthrottled until
 * the first trim of the new slice, which books what it got through as bytes
 * dispatched. It then owes that and is held until it is paid; but every
 * further write while it owes carries the whole debt the same way, and
 * releases it again for a slice, with a larger debt each time. Measured
 * (tests/bench/iomax_escape.sh): a direct writer cut from 40 to 5 MiB/s and
 * rewritten every second between 1.25 and 5 MiB/s ran at 44-56 MiB/s in 4 of
 * 10 trials. So a pod's io.max is not written while it owes.
 *
 * Judged per direction (the kernel throttles reads and writes apart) from
 * io.stat, which counts a bio when the throttle lets it go: what the pod did
 * since our last write (done, dt seconds) against the caps that write put in
 * place (cap: bytes/s, IOPS; 0 = none). It begins to owe at more than
 * IOQ_UG_OWE_ENTER_S of its cap and IOQ_UG_OWE_ENTER_BYTES / _IOS (a slice
 * ahead, a raise's credit of about one bio and the time between the io.stat
 * read and the write are legitimate). The kernel's debt is then at most what
 * it did beyond its cap plus what it was already ahead of the limit before
 * our write (prev: at most one slice of it, carried into ours), paid at its
 * cap: held until then and one slice more (until). Released earlier once
 * the kernel lets it go again, at no more than its cap: any bio dispatched
 * in an owing direction means the debt is paid, and the group's state is
 * the normal one a write finds (ahead by at most a slice). Got through
 * again (more than its cap since the last judgement: it was judged inside
 * the unthrottled slice): held longer, from what it did by now. Released
 * at until in any case, so a hold always ends. Was judged with the previous
 * rule (owing until within 0.1 s of its cap and 1 MiB of it since the
 * write): that forgot the part carried from before the write, and the
 * release itself let the pod through again (virtio ioqos+4u, 2026-12-06:
 * held 5.1 s, through again 1 s after with 56 MB). */
#define IOQ_UG_SLICE_S 0.1 /* blk-throttle's slice: HZ/10 (HZ/50 only with the low limit built in) */
#define IOQ_UG_OWE_ENTER_S 0.25
#define IOQ_UG_OWE_ENTER_BYTES (4ull * 1024 * 1024)
#define IOQ_UG_OWE_ENTER_IOS 16.0
enum { IOQ_UG_READ, IOQ_UG_WRITE, IOQ_UG_DIRS };
struct ioq_ug_done {
  double bytes, ios;
};
struct ioq_ug_owe {
  bool owes;
  bool dir[IOQ_UG_DIRS];                /* the directions that owe */
  double since, until;                  /* held since; paid by then at the latest */
  double t;                             /* the last judgement */
  struct ioq_ug_done at[IOQ_UG_DIRS];   /* done (since the write) at the last judgement */
};
enum ioq_ug_owe_step {
  IOQ_UG_OWE_NONE,  /* does not owe: write */
  IOQ_UG_OWE_BEGAN, /* begins to owe: held */
  IOQ_UG_OWE_HELD,  /* still owes: held */
  IOQ_UG_OWE_AGAIN, /* got through again while held: held longer */
  IOQ_UG_OWE_PAID,  /* paid (or let go by the kernel): write */
};
enum ioq_ug_owe_step ioq_ug_owe_judge(struct ioq_ug_owe *o, const uint64_t cap[IOQ_RES_COUNT],
                                      const uint64_t prev[IOQ_RES_COUNT], const struct ioq_ug_done done[IOQ_UG_DIRS],
                                      double dt, double now);

/* At a sample between passes: true when the lender was lending and its rate
 * over the sample exceeds what it keeps; it then keeps its whole grant (the
 * caller cuts the pool now). */
bool ioq_ug_lend_woke(struct ioq_ug_lender *l, double rate);

/* Takes the lender's whole grant back (e.g. it woke in another resource).
 * Returns true if it was lending. */
bool ioq_ug_lend_reclaim(struct ioq_ug_lender *l);

/* The page cache of pods without a grant (nodePolicy.ungranted.pageCacheBytes,
 * docs/ungranted.md "Buffered writers without a grant"). io.max holds a
 * buffered writer's pages at writeback, not where they are dirtied: pages
 * dirty and under writeback behind a small cap pile up to the node-wide dirty
 * limit, which every writer shares, and then the kernel slows every buffered
 * writer on the node, the granted ones too (measured: a granted buffered
 * backup at 0.01-0.03 of its grant beside two such pods). The kernel keeps a
 * dirty limit per cgroup whose room is memory.high - what the cgroup uses:
 * about 20 % of its page cache plus that room, dirty and under writeback
 * together, then the writer is paced at its own writeback rate. So such a pod
 * gets
 *   memory.high = pinned + room
 * pinned: what reclaim of clean page cache cannot free (ioq_memory_pinned);
 * room: pageCacheBytes. Its page cache stays within about `room` and its
 * dirty pages within about a fifth of it; its other memory is not held:
 * memory.high follows pinned at every pass. Returns the value to write, or 0
 * when `cur` (memory.high in place, written by us; 0: none) still fits: within
 * [pinned + room / 2, pinned + 3 room / 2] (fewer writes; a pod whose other
 * memory grows by room / 2 within a pass is raised at the next). */
uint64_t ioq_ug_page_cache_high(uint64_t pinned, uint64_t room, uint64_t cur);

/* The part of the disk's capacity (in (0, 1]) that everything bounded may
 * take together: the advertised units (grants) plus, with the policy for pods
 * without a grant on (ungranted_on), their pool when every unit is held; the
 * larger over the resources the disk has a capacity of. Without any capacity:
 * the allocatable fraction. nodePolicy.iocost.pace: auto paces at this, the
 * lowest rate at which no grant and no pool is cut. */
double ioq_ug_bounded_fraction(const struct ioq_disk *d, const struct ioq_unit_sizes *u,
                               bool ungranted_on, double headroom_share);

#endif
