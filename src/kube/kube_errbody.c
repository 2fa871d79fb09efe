// SPDX-License-Identifier: Apache-2.0
/* The error reply's body kept while a reply streams in (kube_internal.h). */
#include <string.h>

#include "base/fsutil.h"
#include "kube_internal.h"

void ioq_kube_errbody_reset(struct ioq_kube_errbody *b) {
  b->http = 0;
  b->len = 0;
  b->buf[0] = '\0';
}

bool ioq_kube_errbody_take(struct ioq_kube_errbody *b, CURL *c, const char *ptr, size_t n) {
  if (b->http == 0) {
    long st = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    b->http = st >= 200 && st <= 299 ? 1 : -1;
  }
  if (b->http > 0)
    return false;
  size_t room = sizeof b->buf - 1 - b->len;
  size_t take = n < room ? n : room;
  memcpy(b->buf + b->len, ptr, take);
  b->len += take;
  b->buf[b->len] = '\0';
  return true;
}

const char *ioq_kube_errbody_message(struct ioq_kube_errbody *b, json_object **hold) {
  *hold = b->len ? json_tokener_parse(b->buf) : NULL;
  json_object *m;
  if (*hold && json_object_is_type(*hold, json_type_object) &&
      json_object_object_get_ex(*hold, "message", &m) && json_object_is_type(m, json_type_string))
    return json_object_get_string(m);
  const char *t = ioq_trim(b->buf);
  return *t ? t : "(empty reply)";
}
