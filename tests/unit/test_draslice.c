// SPDX-License-Identifier: Apache-2.0
/* The DRA ResourceSlice builder and content comparison (dra/draslice.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "dra/draslice.h"
#include "grant/placement.h"

static struct ioq_unit_sizes g_units;

static void disk(struct ioq_disk *d, const char *name, const char *cls, unsigned major,
                 unsigned minor, uint64_t bw, uint64_t iops, unsigned caps) {
  memset(d, 0, sizeof *d);
  snprintf(d->dev.name, sizeof d->dev.name, "%s", name);
  snprintf(d->class_name, sizeof d->class_name, "%s", cls);
  d->dev.major = major;
  d->dev.minor = minor;
  d->enforceable = true;
  d->caps = caps;
  d->units[IOQ_RES_BANDWIDTH] = bw;
  d->units[IOQ_RES_IOPS] = iops;
}

static struct ioq_dra_slice_in input(const struct ioq_disk *disks, size_t n, int64_t gen) {
  ioq_unit_sizes_default(&g_units);
  return (struct ioq_dra_slice_in){.driver = IOQ_DRA_DRIVER, .node_name = "node-a",
                                   .node_uid = "0b4c4a8e-6a55-4b69-9b43-0d1f2e3c4b5a",
                                   .generation = gen, .units = &g_units, .disks = disks, .n_disks = n};
}

static json_object *at(json_object *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *save, *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) {
    if (json_object_is_type(o, json_type_array))
      o = json_object_array_get_idx(o, (size_t)atoi(k));
    else if (!json_object_object_get_ex(o, k, &o))
      o = NULL;
  }
  cr_assert_not_null(o, "no %s", path);
  return o;
}
static const char *str_at(json_object *o, const char *path) { return json_object_get_string(at(o, path)); }

Test(draslice, device_names) {
  static const char *ok[][2] = {{"sda", "sda"}, {"nvme0n1", "nvme0n1"}, {"dm-0", "dm-0"},
                                {"cciss!c0d0", "cciss-c0d0"}, {"SDB", "sdb"}, {"md_1.2+x", "md-1-2-x"}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char out[IOQ_DRA_DEVICE_NAME_MAX + 1];
    ioq_err e;
    cr_assert_eq(ioq_dra_device_name(ok[i][0], out, &e), 0, "%s: %s", ok[i][0], e.msg);
    cr_assert_str_eq(out, ok[i][1]);
  }
  static const char *bad[] = {"", "-sda", "sda.", "sd a", "s/a",
                              "x234567890123456789012345678901234567890123456789012345678901234"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char out[IOQ_DRA_DEVICE_NAME_MAX + 1] = "untouched";
    ioq_err e;
    cr_assert_eq(ioq_dra_device_name(bad[i], out, &e), -1, "'%s' accepted", bad[i]);
    cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
    cr_assert(strstr(e.msg, "DRA device name"), "%s", e.msg);
    cr_assert_str_eq(out, "untouched");
  }
}

Test(draslice, builds_the_slice) {
  struct ioq_disk d[3];
  disk(&d[0], "sda", "default", 8, 0, 1800, 50, IOQ_CAP_IO_MAX | IOQ_CAP_BUFFERED_WRITES);
  d[0].dev.rotational = true;
  disk(&d[1], "nvme0n1", "fast", 259, 0, 3000, 4000, IOQ_CAP_IO_MAX | IOQ_CAP_IO_WEIGHT);
  disk(&d[2], "sdc", "default", 8, 32, 100, 100, IOQ_CAP_IO_MAX);
  snprintf(d[2].fault, sizeof d[2].fault, "capacity of sdc: calibration.json: not a JSON object");
  struct ioq_dra_slice_in in = input(d, 3, 7);
  json_object *s = NULL;
  size_t n = 99;
  ioq_err e;
  cr_assert_eq(ioq_dra_slice_build(&in, &s, &n, &e), 0, "%s", e.msg);
  cr_assert_eq(n, 2, "the faulty disk is left out");
  cr_assert_str_eq(str_at(s, "apiVersion"), "resource.k8s.io/v1");
  cr_assert_str_eq(str_at(s, "kind"), "ResourceSlice");
  cr_assert_str_eq(str_at(s, "metadata.generateName"), "node-a-ioqos.io-");
  cr_assert_str_eq(str_at(s, "metadata.ownerReferences.0.kind"), "Node");
  cr_assert_str_eq(str_at(s, "metadata.ownerReferences.0.apiVersion"), "v1");
  cr_assert_str_eq(str_at(s, "metadata.ownerReferences.0.name"), "node-a");
  cr_assert_str_eq(str_at(s, "metadata.ownerReferences.0.uid"), in.node_uid);
  cr_assert(json_object_get_boolean(at(s, "metadata.ownerReferences.0.controller")));
  cr_assert_str_eq(str_at(s, "spec.driver"), "ioqos.io");
  cr_assert_str_eq(str_at(s, "spec.nodeName"), "node-a");
  cr_assert_str_eq(str_at(s, "spec.pool.name"), "node-a");
  cr_assert_eq(json_object_get_int64(at(s, "spec.pool.generation")), 7);
  cr_assert_eq(json_object_get_int64(at(s, "spec.pool.resourceSliceCount")), 1);
  cr_assert_eq(json_object_array_length(at(s, "spec.devices")), 2);

  json_object *sda = at(s, "spec.devices.0");
  cr_assert_str_eq(str_at(sda, "name"), "sda");
  cr_assert(json_object_get_boolean(at(sda, "allowMultipleAllocations")));
  cr_assert_str_eq(str_at(sda, "attributes.disk.string"), "sda");
  cr_assert_str_eq(str_at(sda, "attributes.class.string"), "default");
  cr_assert(json_object_get_boolean(at(sda, "attributes.rotational.bool")));
  cr_assert_eq(json_object_get_int64(at(sda, "attributes.major.int")), 8);
  cr_assert_eq(json_object_get_int64(at(sda, "attributes.minor.int")), 0);
  cr_assert_eq(json_object_get_int64(at(sda, "attributes.bandwidthUnitBytesPerSecond.int")), 1048576);
  cr_assert_eq(json_object_get_int64(at(sda, "attributes.iopsUnit.int")), 100);
  cr_assert(json_object_get_boolean(at(sda, "attributes.ioMax.bool")));
  cr_assert(json_object_get_boolean(at(sda, "attributes.bufferedWrites.bool")));
  cr_assert_not(json_object_get_boolean(at(sda, "attributes.ioBfqWeight.bool")));
  cr_assert_not(json_object_get_boolean(at(sda, "attributes.blkioThrottle.bool")));
  cr_assert_eq(json_object_object_length(at(sda, "attributes")) + json_object_object_length(at(sda, "capacity")),
               16, "7 plain + 7 capability attributes + 2 capacities (API limit 32)");
  cr_assert_str_eq(str_at(sda, "capacity.bandwidth.value"), "1800");
  cr_assert_str_eq(str_at(sda, "capacity.bandwidth.requestPolicy.default"), "0");
  cr_assert_str_eq(str_at(sda, "capacity.bandwidth.requestPolicy.validRange.min"), "0");
  cr_assert_str_eq(str_at(sda, "capacity.bandwidth.requestPolicy.validRange.max"), "1800");
  cr_assert_str_eq(str_at(sda, "capacity.bandwidth.requestPolicy.validRange.step"), "1");
  cr_assert_str_eq(str_at(sda, "capacity.iops.value"), "50");
  cr_assert_str_eq(str_at(sda, "capacity.iops.requestPolicy.validRange.max"), "50");
  json_object *nv = at(s, "spec.devices.1");
  cr_assert_str_eq(str_at(nv, "name"), "nvme0n1");
  cr_assert_str_eq(str_at(nv, "attributes.class.string"), "fast");
  cr_assert(json_object_get_boolean(at(nv, "attributes.ioWeight.bool")));
  cr_assert_str_eq(str_at(nv, "capacity.iops.value"), "4000");
  json_object_put(s);
}

Test(draslice, zero_units_resource_has_no_policy) {
  struct ioq_disk d;
  disk(&d, "sda", "default", 8, 0, 500, 0, IOQ_CAP_IO_MAX);
  struct ioq_dra_slice_in in = input(&d, 1, 0);
  json_object *s;
  ioq_err e;
  cr_assert_eq(ioq_dra_slice_build(&in, &s, NULL, &e), 0, "%s", e.msg);
  json_object *iops = at(s, "spec.devices.0.capacity.iops");
  cr_assert_str_eq(str_at(iops, "value"), "0");
  cr_assert_not(json_object_object_get_ex(iops, "requestPolicy", NULL),
                "min + step must not exceed the value: no policy for 0");
  json_object_put(s);
}

Test(draslice, unpublishable_disks) {
  struct ioq_disk d;
  const char *why;
  disk(&d, "sda", "default", 8, 0, 0, 0, IOQ_CAP_IO_MAX);
  cr_assert_not(ioq_dra_disk_publishable(&d, &why));
  cr_assert(strstr(why, "no units"), "%s", why);
  disk(&d, "sda", "default", 8, 0, 10, 10, 0);
  d.enforceable = false;
  snprintf(d.not_enforceable_reason, sizeof d.not_enforceable_reason, "io.max missing");
  cr_assert_not(ioq_dra_disk_publishable(&d, &why));
  cr_assert_str_eq(why, "io.max missing");
  d.enforceable = true;
  cr_assert(ioq_dra_disk_publishable(&d, &why));
  cr_assert_null(why);
  /* no disk at all: an empty but valid slice (the node offers nothing) */
  struct ioq_dra_slice_in in = input(NULL, 0, 0);
  json_object *s;
  ioq_err e;
  cr_assert_eq(ioq_dra_slice_build(&in, &s, NULL, &e), 0, "%s", e.msg);
  cr_assert_eq(json_object_array_length(at(s, "spec.devices")), 0);
  json_object_put(s);
}

static void build_fails(struct ioq_dra_slice_in in, const char *needle) {
  json_object *s = (json_object *)0x1;
  ioq_err e;
  cr_assert_eq(ioq_dra_slice_build(&in, &s, NULL, &e), -1, "accepted (%s)", needle);
  cr_assert(strstr(e.msg, needle), "'%s' lacks '%s'", e.msg, needle);
  cr_assert_eq(s, (json_object *)0x1, "*out touched on failure");
}

Test(draslice, bad_input) {
  struct ioq_disk d[2];
  disk(&d[0], "sda.1", "default", 8, 1, 10, 10, 0);
  disk(&d[1], "sda-1", "default", 8, 2, 10, 10, 0);
  struct ioq_dra_slice_in in = input(d, 1, 0);
  in.node_name = "Node_A";
  build_fails(in, "node name 'Node_A'");
  in = input(d, 1, 0);
  in.node_name = NULL;
  build_fails(in, "node name ''");
  in = input(d, 1, 0);
  in.node_uid = "x/../y";
  build_fails(in, "node UID");
  in.node_uid = "";
  build_fails(in, "node UID");
  in = input(d, 1, -1);
  build_fails(in, "generation -1 is negative");
  in = input(d, 1, 0);
  in.driver = "IOQOS";
  build_fails(in, "driver name");
  in = input(d, 2, 0);
  build_fails(in, "both give DRA device name 'sda-1'");
  in = input(NULL, 2, 0);
  build_fails(in, "no disk list");
  disk(&d[0], "-bad", "default", 8, 1, 10, 10, 0);
  in = input(d, 1, 0);
  build_fails(in, "not a DNS label");
}

Test(draslice, at_most_128_devices) {
  struct ioq_disk *d = calloc(129, sizeof *d);
  for (int i = 0; i < 129; i++) {
    char name[16];
    snprintf(name, sizeof name, "sd%d", i);
    disk(&d[i], name, "default", 8, (unsigned)i, 10, 10, 0);
  }
  struct ioq_dra_slice_in in = input(d, 128, 0);
  json_object *s;
  ioq_err e;
  cr_assert_eq(ioq_dra_slice_build(&in, &s, NULL, &e), 0, "%s", e.msg);
  json_object_put(s);
  in.n_disks = 129;
  build_fails(in, "129 devices, more than the 128");
  free(d);
}

static json_object *built(const struct ioq_disk *d, size_t n, int64_t gen) {
  struct ioq_dra_slice_in in = input(d, n, gen);
  json_object *s;
  ioq_err e;
  cr_assert_eq(ioq_dra_slice_build(&in, &s, NULL, &e), 0, "%s", e.msg);
  return s;
}

Test(draslice, same_content) {
  struct ioq_disk d[2];
  disk(&d[0], "sda", "default", 8, 0, 1000, 2000, IOQ_CAP_IO_MAX);
  disk(&d[1], "sdb", "fast", 8, 16, 3000, 50, IOQ_CAP_IO_MAX);
  json_object *a = built(d, 2, 1), *b = built(d, 2, 2);
  cr_assert(ioq_dra_slice_same_content(a, b), "generation alone is no change");
  json_object_put(b);

  /* as the API server returns it: quantities canonicalised, metadata filled */
  json_object *c = built(d, 2, 5);
  json_object *cap = at(c, "spec.devices.0.capacity.bandwidth");
  json_object_object_add(cap, "value", json_object_new_string("1k"));
  json_object_object_add(at(cap, "requestPolicy.validRange"), "max", json_object_new_string("1k"));
  json_object_object_add(at(c, "spec.devices.0.capacity.iops"), "value", json_object_new_string("2k"));
  json_object_object_add(at(c, "spec.devices.0.capacity.iops.requestPolicy.validRange"), "max",
                         json_object_new_string("2k"));
  json_object_object_add(at(c, "metadata"), "name", json_object_new_string("node-a-ioqos.io-x7k2q"));
  json_object_object_add(at(c, "metadata"), "resourceVersion", json_object_new_string("812"));
  cr_assert(ioq_dra_slice_same_content(a, c), "1k == 1000");
  json_object_put(c);

  struct ioq_disk more[2];
  memcpy(more, d, sizeof d);
  more[1].units[IOQ_RES_IOPS] = 51;
  c = built(more, 2, 1);
  cr_assert_not(ioq_dra_slice_same_content(a, c), "capacity changed");
  json_object_put(c);
  c = built(d, 1, 1);
  cr_assert_not(ioq_dra_slice_same_content(a, c), "a device went away");
  json_object_put(c);
  memcpy(more, d, sizeof d);
  more[0].caps |= IOQ_CAP_IO_WEIGHT;
  c = built(more, 2, 1);
  cr_assert_not(ioq_dra_slice_same_content(a, c), "an attribute changed");
  json_object_put(c);

  /* malformed never compares equal, not even to itself */
  static const char *bad[] = {"{}", "{\"spec\":[]}", "{\"spec\":{\"pool\":{},\"devices\":{}}}",
                              "{\"spec\":{\"pool\":{},\"devices\":[{\"capacity\":{\"iops\":{\"value\":\"-1\"}}}]}}",
                              "{\"spec\":{\"pool\":{},\"devices\":[{\"capacity\":{\"iops\":{\"value\":7}}}]}}",
                              "{\"spec\":{\"pool\":{},\"devices\":[{\"capacity\":{\"iops\":{\"value\":\"1\","
                              "\"requestPolicy\":{\"validValues\":[\"1\",\"x\"]}}}}]}}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_object *m = json_tokener_parse(bad[i]);
    cr_assert_not_null(m);
    cr_assert_not(ioq_dra_slice_same_content(m, m), "%s", bad[i]);
    cr_assert_not(ioq_dra_slice_same_content(a, m), "%s", bad[i]);
    json_object_put(m);
  }
  cr_assert_not(ioq_dra_slice_same_content(NULL, a));
  json_object *vv = json_tokener_parse("{\"spec\":{\"pool\":{},\"devices\":[{\"capacity\":{\"iops\":"
                                       "{\"value\":\"1\",\"requestPolicy\":{\"validValues\":[\"1\",\"1k\"]}}}}]}}");
  json_object *vv2 = json_tokener_parse("{\"spec\":{\"pool\":{},\"devices\":[{\"capacity\":{\"iops\":"
                                        "{\"value\":\"1\",\"requestPolicy\":{\"validValues\":[\"1\",\"1000\"]}}}}]}}");
  cr_assert(ioq_dra_slice_same_content(vv, vv2), "validValues compared by value");
  json_object_put(vv);
  json_object_put(vv2);
  json_object_put(a);
}
