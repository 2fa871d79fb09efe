// SPDX-License-Identifier: Apache-2.0
/* ext-bench-parse FILE [REPS]: how fast the extender reads a full-node
 * request. FILE holds an ExtenderArgs body; each rep feeds it to the
 * incremental JSON reader in 64 KiB chunks (as the HTTP server does), then
 * runs the filter handler on it (node annotations, decisions, reply). Prints
 * one JSON line with medians; bench.py puts it in its table. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "body.h"
#include "extender.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "grant/podneed.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE [REPS]\n", argv[0]);
    return 2;
  }
  int reps = argc > 2 ? atoi(argv[2]) : 20;
  if (reps < 1)
    reps = 1;
  ioq_log_set_level(IOQ_LOG_ERROR);
  char *text;
  size_t len;
  ioq_err e = {0};
  if (ioq_read_file(argv[1], &text, &len, 4ull << 30, &e) < 0) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  struct extender x = {.metrics = ext_metrics_new(), .assumed = ext_assumed_new(60000)};
  double *tparse = calloc((size_t)reps, sizeof *tparse), *tfilter = calloc((size_t)reps, sizeof *tfilter);
  size_t nodes = 0, reply = 0, tree = 0;
  for (int i = 0; i < reps; i++) {
    double t0 = ioq_mono_s();
    struct mallinfo2 m0 = mallinfo2();
    struct ext_body b;
    ext_body_init(&b, len + 1, len, NULL);
    for (size_t off = 0; off < len; off += 65536)
      ext_body_feed(&b, text + off, len - off < 65536 ? len - off : 65536);
    ext_body_finish(&b);
    if (b.err_status) {
      fprintf(stderr, "body: %s\n", b.err);
      return 1;
    }
    json_object *v = ext_body_take(&b);
    ext_body_free(&b);
    double t1 = ioq_mono_s();
    tree = mallinfo2().uordblks - m0.uordblks;
    struct ext_reply r = {0};
    ext_filter(&x, v, &r);
    if (r.status != 200) {
      fprintf(stderr, "filter: %u %s\n", r.status, r.body);
      return 1;
    }
    reply = r.len;
    ext_reply_free(&r);
    json_object *items = ioq_json_field(ioq_json_field(v, "Nodes"), "items");
    nodes = items ? json_object_array_length(items) : 0;
    json_object_put(v);
    double t2 = ioq_mono_s();
    tparse[i] = t1 - t0;
    tfilter[i] = t2 - t1;
  }
  qsort(tparse, (size_t)reps, sizeof *tparse, cmp);
  qsort(tfilter, (size_t)reps, sizeof *tfilter, cmp);
  double p = tparse[reps / 2], f = tfilter[reps / 2];
  printf("{\"bytes\":%zu,\"nodes\":%zu,\"reps\":%d,\"parse_s\":%.6f,\"parse_mib_s\":%.1f,"
         "\"filter_s\":%.6f,\"reply_bytes\":%zu,\"tree_bytes\":%zu,\"tree_estimate\":%zu}\n",
         len, nodes, reps, p, (double)len / p / 1048576.0, f, reply, tree,
         ext_json_tree_estimate(&(struct ext_json_scan){0}, text, len));
  free(tparse);
  free(tfilter);
  free(text);
  ext_assumed_free(x.assumed);
  ext_metrics_free(x.metrics);
  return 0;
}
