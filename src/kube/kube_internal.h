// SPDX-License-Identifier: Apache-2.0
/* Inside the Kubernetes API client (src/kube), not for its users: the curl
 * handle set-up kube.c shares with the informer, and the capture of an error
 * reply's body that a filtered GET (kube.c) and a watch (kube_informer.c)
 * both do while the reply streams in. */
#ifndef IOQOS_KUBE_INTERNAL_H
#define IOQOS_KUBE_INTERNAL_H

#include <curl/curl.h>
#include <json-c/json.h>
#include <stddef.h>

#include "kube/kube.h"

/* A curl handle for path on k's server with k's credentials and TLS
 * settings; *hdrs (to free with curl_slist_free_all) holds the headers, with
 * Content-Type when content_type is not NULL. NULL with e set on failure. */
CURL *ioq_kube_curl_handle(struct ioq_kube *k, const char *path, struct curl_slist **hdrs,
                           const char *content_type, ioq_err *e)
    __attribute__((warn_unused_result));

/* The start of an error reply (a Status, or a proxy's text), kept while a
 * body streams through a write callback that otherwise consumes it. Zero it
 * (or ioq_kube_errbody_reset) before each transfer. */
struct ioq_kube_errbody {
  int http;       /* 0 unknown yet, 1 a 2xx reply, -1 an error reply */
  char buf[1024]; /* NUL-terminated; the rest of a longer body is dropped */
  size_t len;
};

void ioq_kube_errbody_reset(struct ioq_kube_errbody *b);

/* For the write callback: on the first call reads c's status; true when the
 * reply is an error reply, whose n bytes at ptr were then kept as far as
 * they fit (the callback returns n and does nothing else with them). */
bool ioq_kube_errbody_take(struct ioq_kube_errbody *b, CURL *c, const char *ptr, size_t n);

/* The reason to report: the Status's message, else the body kept (trimmed),
 * else "(empty reply)". Points into *hold (json_object_put it) or b. */
const char *ioq_kube_errbody_message(struct ioq_kube_errbody *b, json_object **hold);

#endif
