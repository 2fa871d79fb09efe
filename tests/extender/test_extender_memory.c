// SPDX-License-Identifier: Apache-2.0
/* Memory bounds of the extender: the json-c tree estimate against real
 * allocations, and the parse budget derived from the cgroup memory limit. */
#include <criterion/criterion.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "body.h"
#include "memlimit.h"

/* ---- the estimate is an upper bound of what json-c really allocates ---- */

static size_t heap(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

/* "[" + n x item joined by "," + "]", or with `object` the items are
 * members of one object ("kN":0). */
static char *flood(const char *item, size_t n, bool object) {
  size_t cap = n * (strlen(item) + 16) + 8, p = 0;
  char *s = malloc(cap);
  s[p++] = object ? '{' : '[';
  for (size_t i = 0; i < n; i++) {
    if (i)
      s[p++] = ',';
    if (object)
      p += (size_t)sprintf(s + p, "\"k%zx\":0", i);
    else
      p += (size_t)sprintf(s + p, "%s", item);
  }
  s[p++] = object ? '}' : ']';
  s[p] = '\0';
  return s;
}

/* Parses text through ext_body in 64 KiB chunks (as the server does) and
 * returns the heap the tree and tokener took at their peak (the tree). */
static void measure(const char *text, size_t *real, size_t *estimate) {
  struct ext_budget budget = {.max = (size_t)1 << 40};
  struct ext_body b;
  size_t before = heap();
  cr_assert_eq(ext_body_init(&b, strlen(text) + 1, strlen(text), &budget), 0);
  size_t n = strlen(text);
  for (size_t off = 0; off < n; off += 65536)
    ext_body_feed(&b, text + off, n - off < 65536 ? n - off : 65536);
  ext_body_finish(&b);
  cr_assert_eq(b.err_status, 0, "%s", b.err);
  *real = heap() - before;
  *estimate = b.reserved;
  ext_body_free(&b);
}

Test(estimate, bounds_small_object_floods_measured) {
  struct {
    const char *item;
    bool object;
  } shapes[] = {
      {"{}", false},  {"[]", false},   {"1", false},       {"true", false},
      {"\"\"", false}, {"[[]]", false}, {"{\"a\":{}}", false}, {NULL, true}, /* many keys */
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char *text = flood(shapes[i].item ? shapes[i].item : "", 100000, shapes[i].object);
    size_t real, estimate;
    measure(text, &real, &estimate);
    cr_log_info("shape %s: %zu bytes of text, tree %zu, estimate %zu\n",
                shapes[i].item ? shapes[i].item : "\"k\":0 members", strlen(text), real, estimate);
    cr_assert_geq(estimate, real, "%s: estimate %zu below the real %zu",
                  shapes[i].item ? shapes[i].item : "members of one object", estimate, real);
    free(text);
  }
}

Test(estimate, string_contents_are_not_structure) {
  /* braces and commas inside a string (JSON text in an annotation) cost
   * their bytes only, also when the string is split across chunks */
  const char *s = "[\"{,{,:,[,\\\"{,{\"]";
  struct ext_json_scan whole = {0}, parts = {0};
  size_t a = ext_json_tree_estimate(&whole, s, strlen(s));
  size_t b = 0;
  for (size_t i = 0; i < strlen(s); i++)
    b += ext_json_tree_estimate(&parts, s + i, 1);
  cr_assert_eq(a, b);
  cr_assert_lt(a, 1000, "string contents counted as objects: %zu", a);
  cr_assert(!whole.in_str);
}

Test(estimate, two_megabytes_of_empty_objects_exceed_a_quarter_of_512Mi) {
  /* the attack: ~2 MB of [{},{},...] is ~530 MB of json-c tree */
  struct ext_budget budget = {.max = ext_parse_budget(512ull << 20)};
  struct ext_body b;
  char *text = flood("{}", 700000, false);
  cr_assert_eq(ext_body_init(&b, 4u << 20, strlen(text), &budget), 0);
  size_t n = strlen(text);
  for (size_t off = 0; off < n && !b.err_status; off += 65536)
    ext_body_feed(&b, text + off, n - off < 65536 ? n - off : 65536);
  cr_assert_eq(b.err_status, 413, "%s", b.err);
  cr_assert_eq(budget.used, 0);
  ext_body_free(&b);
  free(text);
}

/* Feeds `text` in 1 KiB chunks until done or refused; *peak = the most
 * the body held. */
static void feed_small_chunks(struct ext_body *b, const char *text, size_t *peak) {
  size_t n = strlen(text);
  *peak = 0;
  for (size_t off = 0; off < n && !b->err_status; off += 1024) {
    ext_body_feed(b, text + off, n - off < 1024 ? n - off : 1024);
    if (b->reserved > *peak)
      *peak = b->reserved;
  }
}

Test(budget, large_bodies_leave_the_small_share_free) {
  /* others hold half; a large body may grow only to max - max/8 in all,
   * so a plain filter request always finds memory (seen: 503 for a valid
   * filter while four attack bodies were in progress) */
  struct ext_budget budget = {.max = 8u << 20};
  size_t small = budget.max / EXT_BUDGET_SMALL_SHARE;
  budget.used = budget.max / 2;
  struct ext_body b;
  char *text = flood("{}", 200000, false);
  cr_assert_eq(ext_body_init(&b, 4u << 20, strlen(text), &budget), 0);
  size_t peak;
  feed_small_chunks(&b, text, &peak);
  cr_assert_eq(b.err_status, 503, "%u %s", b.err_status, b.err);
  cr_assert_leq(budget.max / 2 + peak, budget.max - small, "held %zu of %zu", peak, budget.max);
  cr_assert_eq(budget.used, budget.max / 2, "the refused body's share is returned");
  ext_body_free(&b);

  /* with every byte of the large share held, a small body still parses */
  budget.used = budget.max - small;
  const char *req = "{\"Pod\":{\"metadata\":{\"name\":\"db\"}},\"NodeNames\":[\"a\",\"b\"]}";
  cr_assert_eq(ext_body_init(&b, 4096, strlen(req), &budget), 0);
  ext_body_feed(&b, req, strlen(req));
  ext_body_finish(&b);
  cr_assert_eq(b.err_status, 0, "%s", b.err);
  ext_body_free(&b);

  /* alone, a body needing more than max - max/8 is too large (413) */
  budget.used = 0;
  cr_assert_eq(ext_body_init(&b, 4u << 20, strlen(text), &budget), 0);
  feed_small_chunks(&b, text, &peak);
  cr_assert_eq(b.err_status, 413, "%u %s", b.err_status, b.err);
  cr_assert_leq(peak, budget.max - small);
  cr_assert_eq(budget.used, 0);
  ext_body_free(&b);
  free(text);
}

Test(budget, only_announced_small_bodies_draw_on_the_small_share) {
  /* CI: a valid filter got 503 while four attack bodies were in progress,
   * because each attack body's first chunks counted as small. Now the
   * large share is full and a first chunk of one byte is refused unless
   * its body announced a small length. */
  struct ext_budget budget = {.max = 8u << 20};
  size_t small = budget.max / EXT_BUDGET_SMALL_SHARE;
  size_t each = ext_budget_small_each(&budget);
  cr_assert_eq(each, small / EXT_BUDGET_SMALL_BODIES);
  budget.used = budget.max - small;
  struct ext_body b;
  size_t lengths[] = {EXT_BODY_LENGTH_UNKNOWN, 64u << 20, each / 2 + 1};
  for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
    cr_assert_eq(ext_body_init(&b, 128u << 20, lengths[i], &budget), 0);
    ext_body_feed(&b, "[", 1);
    cr_assert_eq(b.err_status, 503, "announced %zu: %u %s", lengths[i], b.err_status, b.err);
    ext_body_free(&b);
    cr_assert_eq(budget.used, budget.max - small);
  }

  /* announced small but dense: it stops at `each` (it would have to grow
   * on as a large body, and the large share is full), so one stalled
   * body cannot take the small share from the others */
  char *dense = flood("{}", 20000, false);
  size_t peak;
  cr_assert_eq(ext_body_init(&b, 1u << 20, strlen(dense), &budget), 0);
  feed_small_chunks(&b, dense, &peak);
  cr_assert_eq(b.err_status, 503, "%u %s", b.err_status, b.err);
  cr_assert_leq(peak, each, "held %zu, cap %zu", peak, each);
  ext_body_free(&b);

  /* sending more than it announced makes a body large */
  const char *req = "{\"Pod\":{\"metadata\":{\"name\":\"db\"}},\"NodeNames\":[\"a\",\"b\"]}";
  cr_assert_eq(ext_body_init(&b, 4096, 8, &budget), 0);
  ext_body_feed(&b, req, strlen(req));
  cr_assert_eq(b.err_status, 503, "%u %s", b.err_status, b.err);
  ext_body_free(&b);

  /* bodies stalled just below their cap: while fewer than
   * EXT_BUDGET_SMALL_BODIES stall, an ordinary request parses */
  size_t prefix = 0;
  struct ext_json_scan sc = {0};
  for (size_t cost = 0; prefix < strlen(dense); prefix++) {
    struct ext_json_scan next = sc;
    size_t c = ext_json_tree_estimate(&next, dense + prefix, 1);
    if (cost + c > each * 15 / 16)
      break;
    cost += c;
    sc = next;
  }
  struct ext_body held[EXT_BUDGET_SMALL_BODIES - 1];
  for (int i = 0; i < EXT_BUDGET_SMALL_BODIES; i++) {
    cr_assert_eq(ext_body_init(&b, 4096, strlen(req), &budget), 0);
    ext_body_feed(&b, req, strlen(req));
    ext_body_finish(&b);
    cr_assert_eq(b.err_status, 0, "request while %d bodies stall: %s", i, b.err);
    ext_body_free(&b);
    if (i == EXT_BUDGET_SMALL_BODIES - 1)
      break;
    cr_assert_eq(ext_body_init(&held[i], 1u << 20, strlen(dense), &budget), 0);
    ext_body_feed(&held[i], dense, prefix);
    cr_assert_eq(held[i].err_status, 0, "%s", held[i].err);
    cr_assert_gt(held[i].reserved, each / 2);
    cr_assert_leq(held[i].reserved, each);
  }
  for (int i = 0; i < EXT_BUDGET_SMALL_BODIES - 1; i++)
    ext_body_free(&held[i]);
  cr_assert_eq(budget.used, budget.max - small, "every reservation returned");
  free(dense);
}

/* ---- the memory limit from /proc/self/cgroup and mountinfo ---- */

static char g_root[] = "/tmp/ioqos-memlimit-XXXXXX";

static void put(const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_root, rel);
  char dir[512];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + strlen(g_root) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    mkdir(dir, 0755);
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

static void setup(void) { cr_assert(mkdtemp(g_root)); }
static void teardown(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
  cr_assert_eq(system(cmd), 0);
}

static uint64_t limit_of(const char *cgroup_text, const char *mountinfo_fmt, char *where) {
  char mi[2048];
  snprintf(mi, sizeof mi, mountinfo_fmt, g_root, g_root);
  put("proc/cgroup", cgroup_text);
  put("proc/mountinfo", mi);
  char pc[512], pm[512];
  snprintf(pc, sizeof pc, "%s/proc/cgroup", g_root);
  snprintf(pm, sizeof pm, "%s/proc/mountinfo", g_root);
  uint64_t l = 99;
  ioq_err e = {0};
  cr_assert_eq(ext_memory_limit(pc, pm, &l, where, 512, &e), 0, "%s", e.msg);
  return l;
}

TestSuite(memlimit, .init = setup, .fini = teardown);

Test(memlimit, v2_own_cgroup_and_tighter_parent) {
  const char *mi = "30 1 0:26 / %s/cg2 rw - cgroup2 cgroup2 rw\n"
                   "31 1 0:27 / %s/other rw - tmpfs tmpfs rw\n";
  put("cg2/kubepods/pod1/ctr/memory.max", "536870912\n");
  put("cg2/kubepods/pod1/memory.max", "max\n");
  put("cg2/kubepods/memory.max", "8589934592\n");
  char where[512];
  cr_assert_eq(limit_of("0::/kubepods/pod1/ctr\n", mi, where), 512ull << 20);
  cr_assert(strstr(where, "/ctr/memory.max"), "%s", where);
  put("cg2/kubepods/pod1/memory.max", "134217728\n"); /* the pod's is tighter */
  cr_assert_eq(limit_of("0::/kubepods/pod1/ctr\n", mi, where), 128ull << 20);
  cr_assert(strstr(where, "pod1/memory.max"), "%s", where);
}

Test(memlimit, v2_namespaced_root_and_no_limit) {
  /* a container with its own cgroup namespace sees "0::/" and its cgroup
   * mounted at the root */
  const char *mi = "30 1 0:26 / %s/cg2 rw - cgroup2 cgroup2 rw\n";
  put("cg2/memory.max", "max\n");
  char where[512];
  cr_assert_eq(limit_of("0::/\n", mi, where), 0);
  put("cg2/memory.max", "268435456\n");
  cr_assert_eq(limit_of("0::/\n", mi, where), 256ull << 20);
}

Test(memlimit, v1_memory_controller_wins_on_hybrid_hosts) {
  const char *mi = "35 31 0:32 / %s/memory rw,relatime - cgroup cgroup rw,memory\n"
                   "40 31 0:37 / %s/unified rw - cgroup2 cgroup2 rw\n";
  put("memory/ioqos/memory.limit_in_bytes", "100663296\n");
  put("memory/memory.limit_in_bytes", "9223372036854771712\n"); /* v1 "unlimited" */
  char where[512];
  cr_assert_eq(limit_of("12:pids:/\n4:memory:/ioqos\n0::/\n", mi, where), 96ull << 20);
  cr_assert_eq(limit_of("4:cpu,memory:/\n0::/\n", mi, where), 0);
}

Test(memlimit, v1_mount_of_a_subtree) {
  /* the hierarchy's /kube subtree mounted (root field "/kube") */
  const char *mi = "35 31 0:32 /kube %s/memory rw - cgroup cgroup rw,memory\n%s";
  put("memory/pod/memory.limit_in_bytes", "67108864\n");
  char where[512];
  cr_assert_eq(limit_of("4:memory:/kube/pod\n", mi, where), 64ull << 20);
}

Test(memlimit, errors_name_the_file) {
  put("proc/cgroup", "0::/x\n");
  put("proc/mountinfo", "");
  char pc[512];
  snprintf(pc, sizeof pc, "%s/proc/cgroup", g_root);
  uint64_t l;
  ioq_err e = {0};
  cr_assert_eq(ext_memory_limit(pc, "/nonexistent/mountinfo", &l, NULL, 0, &e), -1);
  cr_assert(strstr(e.msg, "/nonexistent/mountinfo"), "%s", e.msg);
  const char *mi = "30 1 0:26 / %s/cg2 rw - cgroup2 cgroup2 rw\n%s";
  char where[512];
  put("cg2/x/memory.max", "lots\n");
  put("proc/cgroup", "0::/x\n");
  char m[1024];
  snprintf(m, sizeof m, mi, g_root, "");
  put("proc/mountinfo", m);
  char pm[512];
  snprintf(pm, sizeof pm, "%s/proc/mountinfo", g_root);
  cr_assert_eq(ext_memory_limit(pc, pm, &l, where, sizeof where, &e), -1);
  cr_assert(strstr(e.msg, "memory.max") && strstr(e.msg, "lots"), "%s", e.msg);
}

Test(budget, quarter_of_the_limit_clamped) {
  cr_assert_eq(ext_parse_budget(0), EXT_BUDGET_UNLIMITED);
  cr_assert_eq(ext_parse_budget(512ull << 20), 128u << 20);
  cr_assert_eq(ext_parse_budget(16ull << 20), EXT_BUDGET_MIN);
  cr_assert_eq(ext_parse_budget(64ull << 30), EXT_BUDGET_MAX);
}
