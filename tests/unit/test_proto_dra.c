// SPDX-License-Identifier: Apache-2.0
/* The protoc-c code of proto/dra/v1 speaks upstream's bytes for share_id,
 * which upstream declares proto3 `optional` and the C copy declares plain
 * (strip_for_c.cmake drops the label). DEVICE_BYTES is the hand-checked
 * encoding that tests/plugin/test_proto_dra.py also produces with the
 * upstream-shaped (optional) schema in Python. */
#include <criterion/criterion.h>
#include <string.h>

#include "dra/v1/api.pb-c.h"
#include "dra/v1beta1/api.pb-c.h"

typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Device Device;

#define SHARE_ID "4f3c2b1a-0d9e-4c8b-a7f6-e5d4c3b2a190"
/* field 2 (0x12) "node-a", field 3 (0x1a) "sda", field 5 (0x2a) len 36 */
static const char DEVICE_BYTES[] = "\x12\x06node-a\x1a\x03sda\x2a\x24" SHARE_ID;
#define DEVICE_LEN (sizeof DEVICE_BYTES - 1)
#define NO_SHARE_LEN 13u /* the first two fields only */

Test(proto_dra, share_id_encodes_as_upstream) {
  Device d = K8S__IO__KUBELET__PKG__APIS__DRA__V1__DEVICE__INIT;
  d.pool_name = "node-a";
  d.device_name = "sda";
  d.share_id = SHARE_ID;
  size_t n = k8s__io__kubelet__pkg__apis__dra__v1__device__get_packed_size(&d);
  cr_assert_eq(n, DEVICE_LEN);
  uint8_t buf[128];
  cr_assert_eq(k8s__io__kubelet__pkg__apis__dra__v1__device__pack(&d, buf), DEVICE_LEN);
  cr_assert(memcmp(buf, DEVICE_BYTES, DEVICE_LEN) == 0);
}

Test(proto_dra, empty_share_id_is_not_sent) {
  Device d = K8S__IO__KUBELET__PKG__APIS__DRA__V1__DEVICE__INIT;
  d.pool_name = "node-a";
  d.device_name = "sda";
  d.share_id = "";
  uint8_t buf[128];
  cr_assert_eq(k8s__io__kubelet__pkg__apis__dra__v1__device__pack(&d, buf), NO_SHARE_LEN);
  cr_assert(memcmp(buf, DEVICE_BYTES, NO_SHARE_LEN) == 0);
}

Test(proto_dra, upstream_bytes_decode) {
  Device *d = k8s__io__kubelet__pkg__apis__dra__v1__device__unpack(NULL, DEVICE_LEN,
                                                                    (const uint8_t *)DEVICE_BYTES);
  cr_assert_not_null(d);
  cr_assert_str_eq(d->pool_name, "node-a");
  cr_assert_str_eq(d->device_name, "sda");
  cr_assert_str_eq(d->share_id, SHARE_ID);
  k8s__io__kubelet__pkg__apis__dra__v1__device__free_unpacked(d, NULL);
  /* upstream may send a present-but-empty share_id (0x2a 0x00) */
  static const char with_empty[] = "\x12\x06node-a\x1a\x03sda\x2a\x00";
  d = k8s__io__kubelet__pkg__apis__dra__v1__device__unpack(NULL, sizeof with_empty - 1,
                                                           (const uint8_t *)with_empty);
  cr_assert_not_null(d);
  cr_assert_str_eq(d->share_id, "");
  k8s__io__kubelet__pkg__apis__dra__v1__device__free_unpacked(d, NULL);
}

Test(proto_dra, v1beta1_skips_share_id) {
  K8s__Io__Kubelet__Pkg__Apis__Dra__V1beta1__Device *d =
      k8s__io__kubelet__pkg__apis__dra__v1beta1__device__unpack(NULL, DEVICE_LEN,
                                                                (const uint8_t *)DEVICE_BYTES);
  cr_assert_not_null(d, "an unknown field 5 must be skipped, not refused");
  cr_assert_str_eq(d->device_name, "sda");
  k8s__io__kubelet__pkg__apis__dra__v1beta1__device__free_unpacked(d, NULL);
}
