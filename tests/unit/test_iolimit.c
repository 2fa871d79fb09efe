// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <string.h>

#include "units/iolimit.h"

static const struct ioq_devno D816 = {8, 16};

Test(iolimit, devno_parse) {
  struct ioq_devno d;
  ioq_err e = {0};
  cr_assert_eq(ioq_devno_parse("8:16", &d, &e), 0, "%s", e.msg);
  cr_assert_eq(d.major, 8);
  cr_assert_eq(d.minor, 16);
  cr_assert_eq(ioq_devno_parse("259:4294967295", &d, &e), 0);
  cr_assert_eq(d.minor, 4294967295u);
  char buf[IOQ_DEVNO_STR_MAX];
  cr_assert_str_eq(ioq_devno_str(d, buf, sizeof buf), "259:4294967295");
}

struct bad { char in[32]; };
ParameterizedTestParameters(iolimit, devno_bad) {
  static struct bad cases[] = {{""}, {"8"}, {"8:"}, {":16"}, {"8:16:1"}, {"a:b"}, {"8 :16"},
                               {"-8:16"}, {"8:4294967296"}, {"8:16 "}, {"sda"}};
  return cr_make_param_array(struct bad, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct bad *c, iolimit, devno_bad) {
  struct ioq_devno d;
  ioq_err e = {0};
  cr_assert_eq(ioq_devno_parse(c->in, &d, &e), -1, "'%s' accepted", c->in);
  cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
  cr_assert(strstr(e.msg, "MAJ:MIN"), "%s", e.msg);
}

Test(iolimit, iomax_format) {
  char out[160];
  struct ioq_io_limits l = {.rbps = 2097152, .wiops = 120};
  cr_assert_eq(ioq_iomax_format(out, sizeof out, D816, &l, NULL), 0);
  cr_assert_str_eq(out, "8:16 rbps=2097152 wbps=max riops=max wiops=120");
  struct ioq_io_limits none = {0};
  cr_assert_eq(ioq_iomax_format(out, sizeof out, D816, &none, NULL), 0);
  cr_assert_str_eq(out, "8:16 rbps=max wbps=max riops=max wiops=max");
  char small[10];
  ioq_err e = {0};
  cr_assert_eq(ioq_iomax_format(small, sizeof small, D816, &l, &e), -1);
}

/* The kernel's reformatted read-back (cgroup-v2.rst example) compares equal
 * to what was asked for, in any key order. */
Test(iolimit, iomax_parse_kernel_form) {
  const char *content = "8:0 rbps=max wbps=1048576 riops=max wiops=max\n"
                        "8:16 rbps=2097152 wbps=max riops=max wiops=120\n";
  struct ioq_io_limits got, want = {.rbps = 2097152, .wiops = 120};
  bool present;
  ioq_err e = {0};
  cr_assert_eq(ioq_iomax_parse(content, D816, &got, &present, &e), 0, "%s", e.msg);
  cr_assert(present);
  cr_assert(ioq_limits_eq(&got, &want));
  cr_assert_eq(ioq_iomax_parse("8:16 wiops=120 rbps=2097152\n", D816, &got, &present, &e), 0);
  cr_assert(ioq_limits_eq(&got, &want));
  /* a device without a line is unlimited */
  cr_assert_eq(ioq_iomax_parse(content, (struct ioq_devno){8, 32}, &got, &present, &e), 0);
  cr_assert(!present);
  cr_assert(ioq_limits_unlimited(&got));
  cr_assert_eq(ioq_iomax_parse("", D816, &got, &present, &e), 0);
  cr_assert(!present);
  /* U64_MAX is max */
  cr_assert_eq(ioq_iomax_parse("8:16 rbps=18446744073709551615\n", D816, &got, &present, &e), 0);
  cr_assert_eq(got.rbps, 0);
  /* unknown keys (newer kernels) are ignored */
  cr_assert_eq(ioq_iomax_parse("8:16 rbps=5 zzz=1\n", D816, &got, &present, &e), 0);
  cr_assert_eq(got.rbps, 5);
}

ParameterizedTestParameters(iolimit, iomax_parse_bad) {
  static struct bad cases[] = {{"garbage\n"}, {"8:16 rbps\n"}, {"8:16 rbps=x\n"},
                               {"8:16 rbps=-1\n"}, {"8:16 wbps=1.5\n"}};
  return cr_make_param_array(struct bad, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct bad *c, iolimit, iomax_parse_bad) {
  struct ioq_io_limits got;
  bool present;
  ioq_err e = {0};
  cr_assert_eq(ioq_iomax_parse(c->in, D816, &got, &present, &e), -1, "'%s' accepted", c->in);
  cr_assert(strstr(e.msg, "io.max"), "%s", e.msg);
}

Test(iolimit, limits_check_ranges) {
  ioq_err e = {0};
  struct ioq_io_limits l = {.rbps = 2, .wbps = IOQ_BPS_LIMIT_MAX, .riops = 2,
                            .wiops = IOQ_IOPS_LIMIT_MAX};
  cr_assert_eq(ioq_limits_check(&l, &e), 0, "%s", e.msg);
  struct ioq_io_limits one = {.wbps = 1};
  cr_assert_eq(ioq_limits_check(&one, &e), -1);
  cr_assert_eq(e.code, ERANGE);
  cr_assert(strstr(e.msg, "wbps=1"), "%s", e.msg);
  struct ioq_io_limits big = {.riops = IOQ_IOPS_LIMIT_MAX + 1};
  cr_assert_eq(ioq_limits_check(&big, &e), -1);
  cr_assert(strstr(e.msg, "riops=4294967295"), "%s", e.msg);
}

Test(iolimit, blkio_parse) {
  const char *c = "8:0 1000\n8:16 2097152\n";
  uint64_t v;
  bool present;
  ioq_err e = {0};
  cr_assert_eq(ioq_blkio_parse(c, D816, &v, &present, &e), 0, "%s", e.msg);
  cr_assert(present);
  cr_assert_eq(v, 2097152);
  cr_assert_eq(ioq_blkio_parse(c, (struct ioq_devno){7, 0}, &v, &present, &e), 0);
  cr_assert(!present);
  cr_assert_eq(v, 0);
  cr_assert_eq(ioq_blkio_parse("8:16 lots\n", D816, &v, &present, &e), -1);
  cr_assert_eq(ioq_blkio_parse("nonsense\n", D816, &v, &present, &e), -1);
}

Test(iolimit, weights_parse) {
  struct ioq_weights w;
  ioq_err e = {0};
  cr_assert_eq(ioq_weights_parse("default 100\n8:16 500\n8:0 7\n", D816, &w, &e), 0, "%s", e.msg);
  cr_assert_eq(w.dflt, 100);
  cr_assert_eq(w.device, 500);
  cr_assert_eq(ioq_weights_parse("default 300\n", D816, &w, &e), 0);
  cr_assert_eq(w.dflt, 300);
  cr_assert_eq(w.device, 0);
  /* v1 blkio.bfq.weight holds a bare number */
  cr_assert_eq(ioq_weights_parse("250\n", D816, &w, &e), 0);
  cr_assert_eq(w.dflt, 250);
  /* what clearing writes, as a file that keeps it shows it: no weight of its own */
  cr_assert_eq(ioq_weights_parse("default 100\n8:16 default\n", D816, &w, &e), 0, "%s", e.msg);
  cr_assert_eq(w.device, 0);
  cr_assert_eq(w.dflt, 100);
  cr_assert_eq(ioq_weights_parse("8:16 defaults\n", D816, &w, &e), -1);
  cr_assert_eq(ioq_weights_parse("default x\n", D816, &w, &e), -1);
  cr_assert_eq(ioq_weights_parse("8:16 0\n", D816, &w, &e), -1);
  cr_assert_eq(ioq_weights_parse("8:16 10001\n", D816, &w, &e), -1);
  cr_assert_eq(ioq_weights_parse("what is this\n", D816, &w, &e), -1);
}

Test(iolimit, dev_line) {
  char out[64];
  ioq_dev_line("8:0 1\n8:16 rbps=5 wbps=max\n", D816, out, sizeof out);
  cr_assert_str_eq(out, "8:16 rbps=5 wbps=max");
  ioq_dev_line("8:0 1\n", D816, out, sizeof out);
  cr_assert_str_eq(out, "");
}
