// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's logic (grant/grantmon.h): rates from synthetic
 * io.stat / io.pressure sequences, the classifier (each verdict, the
 * latency-bound pod that must not be called starved), counter resets,
 * missing files, cgroup v1, the cause, the window / recovery state machine
 * and the Event rate limiter. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "cgroup/cgwrite.h"
#include "grant/grantmon.h"

#define MiB (1024.0 * 1024.0)
static const struct ioq_devno DEV = {8, 16};

/* counters from the text of io.stat and io.pressure, as the kernel writes them */
static struct ioq_gm_counters sample(const char *iostat, const char *pressure) {
  struct ioq_iostat st[8];
  size_t n = 0;
  ioq_err e;
  cr_assert_eq(ioq_iostat_parse_v2(iostat, st, 8, &n, &e), 0, "%s", e.msg);
  struct ioq_gm_counters c = {0};
  for (size_t i = 0; i < n; i++)
    if (ioq_devno_eq(st[i].dev, DEV)) {
      c.rbytes = st[i].rbytes, c.wbytes = st[i].wbytes, c.rios = st[i].rios, c.wios = st[i].wios;
    }
  if (pressure) {
    struct ioq_pressure p;
    cr_assert_eq(ioq_pressure_parse(pressure, &p, &e), 0, "%s", e.msg);
    c.have_stall = true;
    c.stall_us = p.some.total_us;
  }
  return c;
}

static struct ioq_gm_rates rates(const struct ioq_gm_counters *a, const struct ioq_gm_counters *b) {
  struct ioq_gm_rates r;
  ioq_err e;
  cr_assert_eq(ioq_gm_rates(a, b, 1.0, &r, &e), 0, "%s", e.msg);
  return r;
}

/* a grant of 50 MiB/s both directions and 2000 IOPS */
static const struct ioq_io_limits G = {50 * 1048576ull, 50 * 1048576ull, 2000, 2000};

static struct ioq_gm_disk disk(double bps, double iops, double busy, double queue) {
  struct ioq_gm_disk d = {.cap_bps = 200 * MiB, .cap_iops = 51200, .known = true};
  d.got.bps = bps, d.got.iops = iops, d.got.busy = busy, d.got.queue = queue;
  return d;
}

#define PS(us) "some avg10=0.00 avg60=0.00 avg300=0.00 total=" #us "\n" \
               "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"

Test(grantmon, rates_from_iostat_and_pressure) {
  struct ioq_gm_counters a = sample("8:16 rbytes=1000 wbytes=0 rios=10 wios=0 dbytes=0 dios=0\n"
                                    "8:0 rbytes=5 wbytes=5 rios=1 wios=1 dbytes=0 dios=0\n", PS(100000));
  struct ioq_gm_counters b = sample("8:0 rbytes=9999 wbytes=5 rios=9 wios=1 dbytes=0 dios=0\n"
                                    "8:16 rbytes=2049000 wbytes=4096 rios=510 wios=1 dbytes=0 dios=0\n",
                                    PS(350000));
  struct ioq_gm_rates r;
  ioq_err e;
  cr_assert_eq(ioq_gm_rates(&a, &b, 2.0, &r, &e), 0);
  cr_assert_float_eq(r.rbps, 1024000.0, 1e-6);
  cr_assert_float_eq(r.wbps, 2048.0, 1e-6);
  cr_assert_float_eq(r.riops, 250.0, 1e-6);
  cr_assert_float_eq(r.wiops, 0.5, 1e-6);
  cr_assert_float_eq(r.stall, 0.125, 1e-9);
}

Test(grantmon, no_line_for_the_device_is_zero) {
  struct ioq_gm_counters a = sample("", PS(0)), b = sample("8:0 rbytes=99 wbytes=0 rios=1 wios=0\n", PS(0));
  struct ioq_gm_rates r = rates(&a, &b);
  cr_assert_eq(r.rbps + r.wbps + r.riops + r.wiops, 0.0);
  cr_assert_eq(ioq_gm_classify(&G, &r, IOQ_GM_FULL), IOQ_GM_IDLE);
}

Test(grantmon, counter_reset_is_an_error_not_a_rate) {
  struct ioq_gm_counters a = sample("8:16 rbytes=4096000 wbytes=0 rios=1000 wios=0\n", PS(500000));
  struct ioq_gm_counters b = sample("8:16 rbytes=4096 wbytes=0 rios=1 wios=0\n", PS(500100)); /* re-created */
  struct ioq_gm_rates r;
  ioq_err e;
  cr_assert_eq(ioq_gm_rates(&a, &b, 1.0, &r, &e), -1);
  cr_assert(strstr(e.msg, "backwards"), "%s", e.msg);
  struct ioq_gm_counters c = sample("8:16 rbytes=4096000 wbytes=0 rios=1000 wios=0\n", PS(100));
  cr_assert_eq(ioq_gm_rates(&a, &c, 1.0, &r, &e), -1, "pressure going back is a reset too");
  cr_assert_eq(ioq_gm_rates(&a, &a, 0.0, &r, &e), -1, "no interval");
  cr_assert_eq(ioq_gm_classify(&G, NULL, IOQ_GM_FULL), IOQ_GM_UNKNOWN);
}

Test(grantmon, stall_unknown_without_pressure) {
  struct ioq_gm_counters a = sample("8:16 rbytes=0 wbytes=0 rios=0 wios=0\n", NULL);
  struct ioq_gm_counters b = sample("8:16 rbytes=1048576 wbytes=0 rios=256 wios=0\n", PS(900000));
  struct ioq_gm_rates r = rates(&a, &b);
  cr_assert_lt(r.stall, 0);
}

Test(grantmon, verdicts) {
  struct ioq_gm_rates idle = {0, 0, 0, 0, 0.0};
  struct ioq_gm_rates at_cap = {0, 49 * MiB, 0, 49, 0.95};      /* writer at its bandwidth */
  struct ioq_gm_rates at_iops = {8 * MiB, 0, 1900, 0, 0.99};      /* 4k reader at its IOPS */
  struct ioq_gm_rates starving = {10 * MiB, 0, 2560, 0, 0.90};
  starving.riops = 500;
  struct ioq_gm_rates light = {1 * MiB, 0, 256, 0, 0.02};        /* does little, waits little */
  cr_assert_eq(ioq_gm_classify(&G, &idle, IOQ_GM_FULL), IOQ_GM_IDLE);
  cr_assert_eq(ioq_gm_classify(&G, &at_cap, IOQ_GM_FULL), IOQ_GM_AT_CAP_V);
  cr_assert_eq(ioq_gm_classify(&G, &at_iops, IOQ_GM_ROOM), IOQ_GM_AT_CAP_V);
  cr_assert_eq(ioq_gm_classify(&G, &starving, IOQ_GM_FULL), IOQ_GM_STARVED);
  cr_assert_eq(ioq_gm_classify(&G, &starving, IOQ_GM_BACKLOG), IOQ_GM_STARVED);
  cr_assert_eq(ioq_gm_classify(&G, &light, IOQ_GM_FULL), IOQ_GM_WITHIN, "not stalled: wants no more");
  /* stuck: no I/O at all, but stalled on a full disk */
  struct ioq_gm_rates stuck = {0, 0, 0, 0, 1.0};
  cr_assert_eq(ioq_gm_classify(&G, &stuck, IOQ_GM_FULL), IOQ_GM_STARVED);
  cr_assert_eq(ioq_gm_classify(&G, &stuck, IOQ_GM_ROOM), IOQ_GM_WITHIN);
}

/* PSI counts tasks blocked in synchronous I/O only: a pod waiting on libaio
 * or io_uring completions shows no stall however starved. Busy (a good part
 * of its grant) on a contended disk is starved; a light one is not. */
Test(grantmon, async_io_without_stall) {
  struct ioq_gm_rates busy = {0, 30 * MiB, 0, 30, 0.0};
  struct ioq_gm_rates light = {0, 5 * MiB, 0, 5, 0.0};
  cr_assert_eq(ioq_gm_classify(&G, &busy, IOQ_GM_FULL), IOQ_GM_STARVED);
  cr_assert_eq(ioq_gm_classify(&G, &busy, IOQ_GM_ROOM), IOQ_GM_WITHIN);
  cr_assert_eq(ioq_gm_classify(&G, &light, IOQ_GM_FULL), IOQ_GM_WITHIN);
  struct ioq_io_limits bw_only = {50 * 1048576ull, 50 * 1048576ull, 0, 0};
  struct ioq_gm_rates many_ios = {0, 1 * MiB, 0, 5000, 0.0};
  cr_assert_eq(ioq_gm_classify(&bw_only, &many_ios, IOQ_GM_FULL), IOQ_GM_WITHIN,
               "no IOPS grant: IOs are not compared with 0");
}

/* The crux: a closed-loop QD1 reader is stalled ~all the time even alone
 * and stays far below its bandwidth grant. With the disk at what kept
 * grants produce (0.8 of capacity) and one request in flight it is within. */
Test(grantmon, latency_bound_pod_is_not_starved) {
  struct ioq_gm_counters a = sample("8:16 rbytes=0 wbytes=0 rios=0 wios=0\n", PS(0));
  struct ioq_gm_counters b = sample("8:16 rbytes=4096000 wbytes=0 rios=1000 wios=0\n", PS(980000));
  struct ioq_gm_rates r = rates(&a, &b);
  cr_assert_gt(r.stall, 0.9);
  struct ioq_gm_disk alone = disk(12 * MiB, 3000, 1.0, 1.0);
  struct ioq_gm_disk kept = disk(160 * MiB, 3160, 1.0, 3.0); /* next to a backup at its grant */
  cr_assert_eq(ioq_gm_disk_contended(&alone), IOQ_GM_ROOM);
  cr_assert_eq(ioq_gm_disk_contended(&kept), IOQ_GM_ROOM);
  cr_assert_eq(ioq_gm_classify(&G, &r, ioq_gm_disk_contended(&alone)), IOQ_GM_WITHIN);
  cr_assert_eq(ioq_gm_classify(&G, &r, ioq_gm_disk_contended(&kept)), IOQ_GM_WITHIN);
  /* the same pod when an ungranted writer fills the disk: starved */
  struct ioq_gm_disk full = disk(198 * MiB, 3300, 1.0, 20.0);
  cr_assert_eq(ioq_gm_classify(&G, &r, ioq_gm_disk_contended(&full)), IOQ_GM_STARVED);
}

Test(grantmon, contention) {
  struct ioq_gm_disk d = disk(191 * MiB, 100, 1, 2);
  cr_assert_eq(ioq_gm_disk_contended(&d), IOQ_GM_FULL, "bytes");
  d = disk(10 * MiB, 49000, 1, 2);
  cr_assert_eq(ioq_gm_disk_contended(&d), IOQ_GM_FULL, "IOs");
  d = disk(100 * MiB, 100, 0.99, 12);
  cr_assert_eq(ioq_gm_disk_contended(&d), IOQ_GM_BACKLOG, "saturated below capacity");
  d = disk(100 * MiB, 100, 0.5, 12);
  cr_assert_eq(ioq_gm_disk_contended(&d), IOQ_GM_ROOM, "not busy");
  d.known = false;
  cr_assert_eq(ioq_gm_disk_contended(&d), IOQ_GM_ROOM, "unknown: no starvation claimed");
  d = disk(199 * MiB, 100, 1, 2);
  d.cap_bps = d.cap_iops = 0;
  cr_assert_eq(ioq_gm_disk_contended(&d), IOQ_GM_ROOM, "no capacity known");
}

Test(grantmon, causes) {
  struct ioq_gm_disk d = disk(198 * MiB, 1000, 1, 20);
  d.granted_bps = 150 * MiB, d.granted_iops = 900, d.grants_bps = 160 * MiB, d.grants_iops = 2000;
  cr_assert_eq(ioq_gm_cause(&d), IOQ_GM_CAUSE_UNGRANTED, "48 MiB/s by others");
  d.granted_bps = 190 * MiB;
  d.grants_bps = 220 * MiB;
  cr_assert_eq(ioq_gm_cause(&d), IOQ_GM_CAUSE_OVERSOLD, "grants above capacity");
  d.grants_bps = 120 * MiB;
  cr_assert_eq(ioq_gm_cause(&d), IOQ_GM_CAUSE_OVERSOLD, "both directions used");
  d = disk(120 * MiB, 1000, 1, 20);
  d.granted_bps = 118 * MiB, d.grants_bps = 160 * MiB;
  cr_assert_eq(ioq_gm_cause(&d), IOQ_GM_CAUSE_CAPACITY, "delivers less than sold");
  d.known = false;
  cr_assert_eq(ioq_gm_cause(&d), IOQ_GM_CAUSE_NONE);
  cr_assert_str_eq(ioq_gm_cause_name(IOQ_GM_CAUSE_OVERSOLD), "oversold");
}

Test(grantmon, disk_stat) {
  struct ioq_gm_dstat a, b;
  ioq_err e;
  cr_assert_eq(ioq_gm_dstat_parse("     100 0 800 50 200 0 4096 70 3 1000 2000 0 0 0 0 0 0\n", &a, &e), 0);
  cr_assert_eq(ioq_gm_dstat_parse("     300 0 2848 50 400 0 8192 70 1 1500 6000\n", &b, &e), 0, "older kernels: 11 fields");
  struct ioq_gm_disk_rates r;
  cr_assert_eq(ioq_gm_disk_rates(&a, &b, 0.5, &r, &e), 0);
  cr_assert_float_eq(r.bps, (2048.0 + 4096.0) * 512 / 0.5, 1e-6);
  cr_assert_float_eq(r.iops, 800.0, 1e-6);
  cr_assert_float_eq(r.busy, 1.0, 1e-9);
  cr_assert_float_eq(r.queue, 8.0, 1e-9);
  cr_assert_eq(ioq_gm_disk_rates(&b, &a, 0.5, &r, &e), -1);
  cr_assert_eq(ioq_gm_dstat_parse("1 2 3", &a, &e), -1);
  cr_assert(strstr(e.msg, "11 numbers"), "%s", e.msg);
}

Test(grantmon, read_files_v2_v1_and_missing) {
  char *root = fx_tmpdir();
  fx_write(root, "v2/io.max", "");
  fx_write(root, "v2/cgroup.controllers", "io memory\n");
  fx_write(root, "v2/io.stat", "8:16 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n");
  fx_write(root, "v2/io.pressure", PS(1234));
  struct ioq_cg cg;
  ioq_err e;
  struct ioq_gm_counters c;
  cr_assert_eq(ioq_cg_open(fx_path(root, "v2"), IOQ_CGV2, &cg, &e), 0, "%s", e.msg);
  cr_assert_eq(ioq_gm_read_counters(&cg, &DEV, 1, &c, &e), 0, "%s", e.msg);
  cr_assert_eq(c.rbytes, 4096);
  cr_assert_eq(c.wios, 2);
  cr_assert(c.have_stall);
  cr_assert_eq(c.stall_us, 1234);
  struct ioq_devno two[2] = {{8, 0}, {8, 16}};
  struct ioq_gm_counters c2[2];
  cr_assert_eq(ioq_gm_read_counters(&cg, two, 2, c2, &e), 0, "%s", e.msg);
  cr_assert_eq(c2[0].rbytes, 0, "no line: no I/O yet");
  cr_assert_eq(c2[1].wbytes, 8192);
  cr_assert(c2[0].have_stall && c2[0].stall_us == 1234, "the pod's stall on every disk");
  /* no io.pressure (kernel without PSI): stall unknown, still a sample */
  fx_rmtree(fx_path(root, "v2/io.pressure"));
  cr_assert_eq(ioq_gm_read_counters(&cg, &DEV, 1, &c, &e), 0, "%s", e.msg);
  cr_assert(!c.have_stall);
  /* v1 blkio */
  fx_write(root, "v1/blkio.throttle.read_bps_device", "");
  fx_write(root, "v1/blkio.throttle.io_service_bytes_recursive",
           "8:16 Read 1048576\n8:16 Write 2048\n8:16 Total 1050624\nTotal 1050624\n");
  fx_write(root, "v1/blkio.throttle.io_serviced_recursive",
           "8:16 Read 256\n8:16 Write 1\n8:16 Total 257\nTotal 257\n");
  cr_assert_eq(ioq_cg_open(fx_path(root, "v1"), IOQ_CGV1, &cg, &e), 0, "%s", e.msg);
  cr_assert_eq(ioq_gm_read_counters(&cg, &DEV, 1, &c, &e), 0, "%s", e.msg);
  cr_assert_eq(c.rbytes, 1048576);
  cr_assert_eq(c.rios, 256);
  cr_assert(!c.have_stall, "v1 has no stall figure");
  /* the cgroup is gone */
  fx_rmtree(fx_path(root, "v2"));
  strcpy(cg.dir, fx_path(root, "v2"));
  cg.version = IOQ_CGV2;
  cr_assert_eq(ioq_gm_read_counters(&cg, &DEV, 1, &c, &e), -1);
  fx_rmtree(root);
}

/* v1: no stall; a pod doing I/O below its grant on a full disk is starved,
 * with room it is within */
Test(grantmon, v1_without_stall) {
  struct ioq_gm_rates r = {5 * MiB, 0, 1280, 0, -1};
  cr_assert_eq(ioq_gm_classify(&G, &r, IOQ_GM_FULL), IOQ_GM_STARVED);
  cr_assert_eq(ioq_gm_classify(&G, &r, IOQ_GM_ROOM), IOQ_GM_WITHIN);
  struct ioq_gm_rates z = {0, 0, 0, 0, -1};
  cr_assert_eq(ioq_gm_classify(&G, &z, IOQ_GM_FULL), IOQ_GM_IDLE);
}

/* ---- window / recovery ---- */

static enum ioq_gm_action step(struct ioq_gm_track *t, enum ioq_gm_verdict v, double now) {
  return ioq_gm_track_step(t, v, now, 1.0, 30.0, 3.0);
}

Test(grantmon_track, warns_once_after_the_window_then_recovers) {
  struct ioq_gm_track t = {0};
  double now = 100;
  cr_assert_eq(step(&t, IOQ_GM_WITHIN, ++now), IOQ_GM_NOTHING);
  int warned = 0;
  for (int i = 0; i < 29; i++)
    cr_assert_eq(step(&t, IOQ_GM_STARVED, ++now), IOQ_GM_NOTHING, "interval %d", i);
  cr_assert_eq(step(&t, IOQ_GM_STARVED, ++now), IOQ_GM_NOT_MET, "30 s starved");
  for (int i = 0; i < 100; i++)
    warned += step(&t, IOQ_GM_STARVED, ++now) == IOQ_GM_NOT_MET;
  cr_assert_eq(warned, 0, "once per stretch");
  cr_assert_eq(step(&t, IOQ_GM_WITHIN, ++now), IOQ_GM_NOTHING);
  cr_assert_eq(step(&t, IOQ_GM_AT_CAP_V, ++now), IOQ_GM_NOTHING);
  cr_assert_eq(step(&t, IOQ_GM_WITHIN, ++now), IOQ_GM_MET, "3 s without starvation");
  cr_assert_eq(step(&t, IOQ_GM_WITHIN, ++now), IOQ_GM_NOTHING);
  cr_assert_eq(t.verdict, IOQ_GM_WITHIN);
}

Test(grantmon_track, short_gaps_do_not_restart_the_window) {
  struct ioq_gm_track t = {0};
  double now = 0.5;
  int got = 0;
  for (int i = 0; i < 40 && !got; i++) /* starved 4 intervals of 5, noise in between */
    got = step(&t, i % 5 == 4 ? IOQ_GM_WITHIN : IOQ_GM_STARVED, ++now) == IOQ_GM_NOT_MET ? i + 1 : 0;
  cr_assert_eq(got, 31, "warned at %d: the first starved interval once 30 s have passed", got);
  /* a long gap ends the stretch (no Warning posted before: no MET) */
  struct ioq_gm_track u = {0};
  now = 0.5;
  for (int i = 0; i < 20; i++)
    step(&u, IOQ_GM_STARVED, ++now);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(step(&u, IOQ_GM_IDLE, ++now), IOQ_GM_NOTHING);
  cr_assert_eq(u.starved_since, 0);
  for (int i = 0; i < 29; i++)
    cr_assert_eq(step(&u, IOQ_GM_STARVED, ++now), IOQ_GM_NOTHING, "the window starts again (%d)", i);
  cr_assert_eq(step(&u, IOQ_GM_STARVED, ++now), IOQ_GM_NOT_MET);
}

Test(grantmon_track, unknown_changes_nothing_and_declined_gives_no_met) {
  struct ioq_gm_track t = {0};
  double now = 0.5;
  for (int i = 0; i < 10; i++)
    step(&t, IOQ_GM_STARVED, ++now);
  for (int i = 0; i < 10; i++)
    cr_assert_eq(step(&t, IOQ_GM_UNKNOWN, ++now), IOQ_GM_NOTHING);
  cr_assert_gt(t.starved_since, 0, "unknown intervals neither end nor ...");
  cr_assert_eq(t.verdict, IOQ_GM_STARVED);
  enum ioq_gm_action a = IOQ_GM_NOTHING;
  while (a == IOQ_GM_NOTHING)
    a = step(&t, IOQ_GM_STARVED, ++now);
  cr_assert_eq(a, IOQ_GM_NOT_MET);
  cr_assert_float_eq(now, 30.5, 1e-9, "... extend the stretch: window from its first interval");
  ioq_gm_track_declined(&t);
  for (int i = 0; i < 5; i++)
    cr_assert_eq(step(&t, IOQ_GM_WITHIN, ++now), IOQ_GM_NOTHING, "no MET for a Warning not posted");
}

/* ---- rate limit ---- */

Test(grantmon_rate, one_per_interval) {
  struct ioq_gm_ratelimit rl = {0};
  cr_assert(ioq_gm_ratelimit_allow(&rl, 1000, 600));
  cr_assert(!ioq_gm_ratelimit_allow(&rl, 1001, 600));
  cr_assert(!ioq_gm_ratelimit_allow(&rl, 1599.9, 600));
  cr_assert_eq(rl.suppressed, 2);
  cr_assert(ioq_gm_ratelimit_allow(&rl, 1600, 600));
  cr_assert(!ioq_gm_ratelimit_allow(&rl, 1601, 600));
  struct ioq_gm_ratelimit z = {0};
  cr_assert(ioq_gm_ratelimit_allow(&z, 0, 600), "the first one at time 0 passes");
  struct ioq_gm_ratelimit off = {0};
  cr_assert(ioq_gm_ratelimit_allow(&off, 5, 0) && ioq_gm_ratelimit_allow(&off, 5, 0), "0 = no limit");
}
