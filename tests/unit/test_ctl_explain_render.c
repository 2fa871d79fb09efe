// SPDX-License-Identifier: Apache-2.0
/* ioqosctl explain's screen (plugin/ctl/explain_render.c): rates, times,
 * every section of a granted pod's and an ungranted pod's document, and
 * documents that are partial or have fields of the wrong type. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain_render.h"

static char *render(const char *text, int *rc) {
  json_object *doc = json_tokener_parse(text);
  cr_assert_not_null(doc, "test document does not parse: %s", text);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_not_null(f);
  char err[256] = "";
  *rc = explain_render(f, doc, err, sizeof err);
  fclose(f);
  json_object_put(doc);
  if (*rc < 0) {
    free(buf);
    return strdup(err);
  }
  return buf;
}

#define HAS(out, s) cr_expect(strstr(out, s) != NULL, "missing \"%s\" in:\n%s", s, out)
#define HASNT(out, s) cr_expect(strstr(out, s) == NULL, "unexpected \"%s\" in:\n%s", s, out)

Test(explain_render, rates) {
  char b[32];
  explain_fmt_rate(b, sizeof b, 0);
  cr_expect_str_eq(b, "0 B/s");
  explain_fmt_rate(b, sizeof b, 512);
  cr_expect_str_eq(b, "512 B/s");
  explain_fmt_rate(b, sizeof b, 1536);
  cr_expect_str_eq(b, "1.5 KiB/s");
  explain_fmt_rate(b, sizeof b, 100.0 * 1048576);
  cr_expect_str_eq(b, "100 MiB/s");
  explain_fmt_rate(b, sizeof b, 3.0 * 1073741824 * 1024);
  cr_expect_str_eq(b, "3072 GiB/s");
}

Test(explain_render, times) {
  char b[64];
  explain_fmt_time(b, sizeof b, 0, 100);
  cr_expect_str_eq(b, "-");
  explain_fmt_time(b, sizeof b, 1764567001.5, 1764567043.5); /* 2025-12-01 05:30:01Z */
  cr_expect_str_eq(b, "2025-12-01 05:30:01Z (42s ago)");
  explain_fmt_time(b, sizeof b, 1764567001, 1764567001 + 600);
  cr_expect_str_eq(b, "2025-12-01 05:30:01Z (10m ago)");
  explain_fmt_time(b, sizeof b, 1764567001, 1764567001 + 3 * 3600);
  cr_expect_str_eq(b, "2025-12-01 05:30:01Z (3h ago)");
  explain_fmt_time(b, sizeof b, 1764567001, 0); /* no reference time */
  cr_expect_str_eq(b, "2025-12-01 05:30:01Z");
}

static const char *GRANTED =
    "{\"node\":\"n1\",\"generatedAt\":1764567043.0,\"granted\":true,"
    "\"pod\":{\"namespace\":\"default\",\"name\":\"db\",\"uid\":\"u-1\",\"phase\":\"Running\","
    "\"qosClass\":\"Burstable\",\"class\":\"fast\",\"diskAnnotation\":\"nvme0n1\","
    "\"requested\":{\"ioqos/bandwidth\":100,\"ioqos/iops\":5}},"
    "\"listedByKubelet\":true,"
    "\"containers\":[{\"container\":\"app\",\"kind\":\"app\",\"resource\":\"ioqos/bandwidth\","
    "\"units\":100,\"disk\":\"nvme0n1\"}],"
    "\"grants\":[{\"disk\":\"nvme0n1\",\"device\":\"259:0\",\"units\":{\"ioqos/bandwidth\":100,"
    "\"ioqos/iops\":0},\"limits\":{\"rbps\":104857600,\"wbps\":104857600,\"riops\":0,"
    "\"wiops\":0},\"diskBandwidthUnits\":800,\"diskIopsUnits\":400,\"diskHealthy\":false,"
    "\"diskUnhealthyReason\":\"io.max missing\",\"reason\":{\"summary\":\"ioqos.io/disk=nvme0n1 "
    "(set by the scheduler extender's bind, or by hand); class fast\",\"preferredAllocation\":"
    "[{\"resource\":\"ioqos/bandwidth\",\"how\":\"annotation\",\"note\":\"hint honoured\"}]}}],"
    "\"cgroup\":{\"path\":\"/sys/fs/cgroup/kubepods/burstable/podu-1\",\"how\":\"derived from QoS "
    "class Burstable and the UID (cgroupfs driver, detected)\",\"kubeletCgroupRoot\":\"/\","
    "\"driverFlag\":\"auto\",\"enforcedPath\":\"/sys/fs/cgroup/kubepods/burstable/podu-1\"},"
    "\"files\":[{\"path\":\"/sys/fs/cgroup/kubepods/burstable/podu-1/io.max\",\"file\":\"io.max\","
    "\"written\":\"259:0 rbps=104857600 wbps=104857600\",\"writtenAt\":1764567001.0,"
    "\"readBack\":\"259:0 rbps=104857600 wbps=104857600 riops=max wiops=max\","
    "\"verifiedAt\":1764567041.0},{\"path\":\"/x/io.weight\",\"file\":\"io.weight\","
    "\"written\":\"\",\"readBack\":\"default 100\",\"verifiedAt\":1764567041.0,"
    "\"note\":\"per-device form refused\"}],"
    "\"monitor\":{\"enabled\":true,\"monitored\":true,\"intervalSeconds\":1,"
    "\"starvedWindowSeconds\":30,\"eventsSuppressed\":2,\"disks\":[{\"disk\":\"nvme0n1\","
    "\"dev\":\"259:0\",\"grant\":{\"rbps\":104857600,\"wbps\":104857600,\"riops\":0,"
    "\"wiops\":0},\"verdict\":\"starved\",\"verdictSince\":\"2025-12-01T05:30:11Z\","
    "\"starvedSince\":\"2025-12-01T05:30:11Z\",\"last\":{\"rbps\":1048576,\"wbps\":0,"
    "\"riops\":10,\"wiops\":0,\"stall\":0.4,\"intervalSeconds\":1.0},\"diskNow\":{\"bps\":"
    "209715200,\"iops\":800,\"busy\":1.0,\"inflight\":4,\"capacityBps\":209715200,"
    "\"capacityIops\":1000,\"grantedBps\":104857600,\"grantsBps\":104857600,"
    "\"contended\":\"full\",\"cause\":\"ungranted\"},\"history\":[{\"verdict\":\"within\"},"
    "{\"verdict\":\"starved\"}]},{\"disk\":\"sdb\",\"verdict\":\"unknown\",\"grant\":{}}]},"
    "\"events\":[{\"type\":\"Warning\",\"reason\":\"IoqosGrantNotMet\",\"message\":\"achieved 1 "
    "MiB/s of 100\",\"count\":3,\"first\":1764567001.0,\"last\":1764567033.0,"
    "\"dropped\":false}],"
    "\"nodePolicy\":{\"qosClassWeights\":{\"Burstable\":0,\"BestEffort\":10},"
    "\"iocost\":{\"enable\":false},\"ungranted\":{\"enable\":true,\"intervalMs\":1000,"
    "\"pod\":{\"podSeen\":true,\"disks\":[{\"disk\":\"nvme0n1\",\"active\":true,"
    "\"poolBytesPerSec\":209715200,\"poolIops\":1000,\"podsBounded\":2,\"granted\":true}]}}}}";

Test(explain_render, granted_pod) {
  int rc;
  char *out = render(GRANTED, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  HAS(out, "Pod:      default/db  uid u-1");
  HAS(out, "phase Running, QoS Burstable, ioqos class fast, ioqos.io/disk nvme0n1");
  HAS(out, "requests ioqos/bandwidth 100, ioqos/iops 5");
  HAS(out, "app                  app      ioqos/bandwidth     100  nvme0n1");
  HAS(out, "disk nvme0n1 (259:0): pod total 100 bandwidth + 0 iops units of 800 + 400 on the disk");
  HAS(out, "io.max: rbps 100 MiB/s, wbps 100 MiB/s, riops max, wiops max");
  HAS(out, "why this disk: ioqos.io/disk=nvme0n1");
  HAS(out, "ioqos/bandwidth: hint honoured");
  HAS(out, "! disk unhealthy: io.max missing");
  HAS(out, "Cgroup:   /sys/fs/cgroup/kubepods/burstable/podu-1\n");
  HAS(out, "derived from QoS class Burstable");
  HASNT(out, "limits were written to"); /* same path */
  HAS(out, "wrote \"259:0 rbps=104857600 wbps=104857600\" at 2025-12-01 05:30:01Z (42s ago)");
  HAS(out, "read back \"259:0 rbps=104857600 wbps=104857600 riops=max wiops=max\" at "
           "2025-12-01 05:30:41Z (2s ago)");
  HAS(out, "(found in place, not written by this plugin run)");
  HAS(out, "note: per-device form refused");
  HAS(out, "Monitor:  every 1 s; starved for 30 s raises IoqosGrantNotMet");
  HAS(out, "nvme0n1: starved since 2025-12-01T05:30:11Z (starved since 2025-12-01T05:30:11Z)");
  HAS(out, "achieved: read 1 MiB/s of 100 MiB/s, write 0 B/s of 100 MiB/s, 10 / 0 IOPS of 0 / 0; "
           "stalled 40% of the time");
  HAS(out, "disk now: 200 MiB/s of 200 MiB/s capacity, busy 100%, contended full; grants want "
           "100 MiB/s; likely cause: ungranted");
  HAS(out, "last 2 intervals: within starved");
  HAS(out, "sdb: unknown\n    achieved: no complete interval yet (grant read max, write max)");
  HAS(out, "2 Events not posted (rate limit)");
  HAS(out, "Warning IoqosGrantNotMet (x3)");
  HAS(out, "achieved 1 MiB/s of 100");
  HAS(out, "Node policy:\n");
  HAS(out, "pool 200 MiB/s, 1000 IOPS shared by 2 pod(s); this pod holds a grant here");
  HAS(out, "Burstable left as is, BestEffort 10 (this pod: Burstable)");
  free(out);
}

Test(explain_render, ungranted_pod) {
  int rc;
  char *out = render(
      "{\"node\":\"n1\",\"granted\":false,\"pod\":{\"namespace\":\"default\",\"name\":\"web\","
      "\"qosClass\":\"BestEffort\",\"requested\":{\"ioqos/bandwidth\":0,\"ioqos/iops\":0}},"
      "\"listedByKubelet\":false,\"containers\":[],\"grants\":[],\"files\":[],"
      "\"cgroup\":{\"error\":\"pod cgroup not found: tried /a, /b\"},"
      "\"monitor\":{\"enabled\":false,\"reason\":\"the grant monitor is off\"},\"events\":[],"
      "\"nodePolicy\":{\"qosClassWeights\":{\"Burstable\":100,\"BestEffort\":0},"
      "\"iocost\":{\"enable\":true},\"ungranted\":{\"enable\":true,\"intervalMs\":500,"
      "\"pod\":{\"podSeen\":true,\"disks\":[{\"disk\":\"sda\",\"active\":true,"
      "\"poolBytesPerSec\":104857600,\"poolIops\":500,\"podsBounded\":1,\"granted\":false,"
      "\"bounded\":true,\"capBytesPerSec\":52428800,\"capIops\":250,"
      "\"measuredBytesPerSec\":1048576,\"owesKernelSeconds\":2.5},{\"disk\":\"sdb\",\"active\":false}]}}}}",
      &rc);
  cr_assert_eq(rc, 0, "%s", out);
  HAS(out, "none: the pod requests no ioqos units");
  HAS(out, "Cgroup:   (not found)");
  HAS(out, "! pod cgroup not found: tried /a, /b");
  HASNT(out, "Files");
  HAS(out, "Monitor:  the grant monitor is off");
  HAS(out, "Events (by this plugin, newest first): none");
  HAS(out, "Node policy (this pod has no grant):");
  HAS(out, "sda: pool 100 MiB/s, 500 IOPS shared by 1 pod(s); this pod's bound 50 MiB/s, 250 "
           "IOPS; measured 1 MiB/s");
  HAS(out, "    its io.max is held (2.5 s so far): after a cut it got through more than its limits allow");
  HAS(out, "sdb: no pod holds units of it: no bound applies");
  HAS(out, "Burstable 100, BestEffort left as is (this pod: BestEffort)");
  HAS(out, "iocost: enabled by the plugin");
  free(out);
}

/* lending (docs/ungranted.md): the pool's two parts, and what a granted pod lends */
Test(explain_render, lent_pool) {
  int rc;
  char *out = render(
      "{\"pod\":{\"namespace\":\"default\",\"name\":\"db\"},\"granted\":true,"
      "\"nodePolicy\":{\"ungranted\":{\"enable\":true,\"intervalMs\":1000,\"lend\":true,\"lendSampleMs\":50,"
      "\"pod\":{\"podSeen\":true,\"disks\":[{\"disk\":\"vda\",\"active\":true,"
      "\"poolBytesPerSec\":209715200,\"poolBaseBytesPerSec\":20971520,\"lentBytesPerSec\":188743680,"
      "\"poolIops\":1000,\"lentIops\":0,\"podsBounded\":1,\"granted\":true,"
      "\"lendsBytesPerSec\":188743680,\"lendsIops\":0}]}}}}",
      &rc);
  cr_assert_eq(rc, 0, "%s", out);
  HAS(out, "vda: pool 200 MiB/s, 1000 IOPS shared by 1 pod(s) (20 MiB/s nobody holds + 180 MiB/s, 0 IOPS "
           "lent by idle grants); this pod holds a grant here and lends 180 MiB/s, 0 IOPS of it while idle");
  HAS(out, "idle grants: lent to the pool, taken back when used (lenders sampled every 50 ms)");
  free(out);
}

/* the opt-in burst (docs/ungranted.md): the policy, the pod's annotation,
 * and the extra in place or allowed */
static char *render_burst(const char *mode, const char *ann, const char *disk, int *rc) {
  char doc[1024];
  snprintf(doc, sizeof doc,
           "{\"pod\":{\"namespace\":\"default\",\"name\":\"db\"},\"granted\":true,"
           "\"nodePolicy\":{\"ungranted\":{\"enable\":true,\"intervalMs\":1000,\"burst\":\"%s\","
           "\"burstAnnotation\":\"%s\",\"pod\":{\"podSeen\":true,\"disks\":[{\"disk\":\"vda\","
           "\"active\":true,\"poolBytesPerSec\":209715200,\"poolIops\":1000,\"podsBounded\":1,"
           "\"granted\":true,%s}]}}}}",
           mode, ann, disk);
  return render(doc, rc);
}

Test(explain_render, burst) {
  int rc;
  char *out = render_burst("annotated", "true",
                           "\"mayBurst\":true,\"burstBytesPerSec\":52428800,\"burstIops\":0", &rc);
  cr_assert_eq(rc, 0, "%s", out);
  HAS(out, "burst: granted pods annotated ioqos.io/burst: \"true\" may use idle capacity above their grant "
           "(nodePolicy.ungranted.burst: annotated); this pod is annotated");
  HAS(out, "this pod holds a grant here and bursts 50 MiB/s, 0 IOPS above it (idle capacity, taken back first)");
  free(out);
  out = render_burst("annotated", "invalid", "\"mayBurst\":false,\"burstBytesPerSec\":0,\"burstIops\":0", &rc);
  HAS(out, "this pod has the annotation with a value other than \"true\" or \"false\": it does not burst");
  HAS(out, "this pod holds a grant here\n");
  free(out);
  out = render_burst("all", "", "\"mayBurst\":true,\"burstBytesPerSec\":0,\"burstIops\":0", &rc);
  HAS(out, "burst: every granted pod may use idle capacity above its grant");
  HAS(out, "this pod holds a grant here (may burst above it; not bursting now)");
  free(out);
  out = render_burst("off", "true", "\"mayBurst\":false,\"burstBytesPerSec\":0,\"burstIops\":0", &rc);
  HAS(out, "burst: off on this node (nodePolicy.ungranted.burst: off): the pod's ioqos.io/burst annotation has "
           "no effect");
  free(out);
  out = render_burst("off", "", "\"mayBurst\":false", &rc);
  HASNT(out, "burst");
  free(out);
}

/* the page cache bound of a pod without a grant, and why one is not bounded */
Test(explain_render, page_cache_bound) {
  int rc;
  char *out = render(
      "{\"pod\":{\"namespace\":\"default\",\"name\":\"build\"},\"granted\":false,"
      "\"nodePolicy\":{\"ungranted\":{\"enable\":true,\"intervalMs\":1000,"
      "\"pod\":{\"podSeen\":true,\"pageCache\":{\"roomBytes\":67108864,\"bounded\":true,"
      "\"memoryHighBytes\":171966464,\"pinnedBytes\":104857600,\"dirtyBytes\":6291456,"
      "\"writebackBytes\":7340032},\"disks\":[]}}}}",
      &rc);
  cr_assert_eq(rc, 0, "%s", out);
  HAS(out, "this pod's page cache: bounded, memory.high 164 MiB (its other memory + 64 MiB); 13 MiB dirty or "
           "under writeback");
  free(out);
  out = render("{\"pod\":{},\"nodePolicy\":{\"ungranted\":{\"enable\":true,\"pod\":{\"podSeen\":true,"
               "\"pageCache\":{\"roomBytes\":67108864,\"bounded\":false,\"note\":\"it has a memory limit\"}}}}}",
               &rc);
  cr_assert_eq(rc, 0, "%s", out);
  HAS(out, "this pod's page cache: not bounded (it has a memory limit)");
  free(out);
  out = render("{\"pod\":{},\"nodePolicy\":{\"ungranted\":{\"enable\":true,\"pod\":{\"podSeen\":true,"
               "\"pageCache\":{\"roomBytes\":0,\"bounded\":false}}}}}",
               &rc);
  cr_assert_eq(rc, 0, "%s", out);
  HAS(out, "page cache of pods without a grant: not bounded (nodePolicy.ungranted.pageCacheBytes: 0)");
  free(out);
}

Test(explain_render, ungranted_off_and_partial_documents) {
  int rc;
  char *out = render("{\"pod\":{},\"nodePolicy\":{\"ungranted\":{\"enable\":false}}}", &rc);
  cr_assert_eq(rc, 0);
  HAS(out, "Pod:      -/-  uid -");
  HAS(out, "not bounded (nodePolicy.ungranted.enable: false)");
  free(out);
  /* wrong types everywhere: printed as missing, never trusted */
  out = render("{\"pod\":{\"name\":7,\"requested\":\"x\"},\"containers\":{\"a\":1},"
               "\"grants\":[1,\"x\",null,{\"units\":[],\"limits\":\"no\"}],\"files\":[null,3],"
               "\"events\":\"none\",\"monitor\":{\"enabled\":true,\"monitored\":true,\"x\":[1,{}]},"
               "\"generatedAt\":\"now\",\"nodePolicy\":[]}",
               &rc);
  cr_assert_eq(rc, 0);
  HAS(out, "Pod:      -/-");
  free(out);
}

Test(explain_render, not_an_explain_document) {
  int rc;
  char *out = render("{\"error\":\"pod default/x not found\"}", &rc);
  cr_expect_eq(rc, -1);
  HAS(out, "not an explain document");
  free(out);
  out = render("[1,2]", &rc);
  cr_expect_eq(rc, -1);
  free(out);
  out = render("{\"pod\":\"default/x\"}", &rc);
  cr_expect_eq(rc, -1);
  free(out);
}
