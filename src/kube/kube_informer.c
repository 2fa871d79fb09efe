// SPDX-License-Identifier: Apache-2.0
/* list + watch in a background thread (the informer pattern of client-go,
 * reduced to what ioqos needs: a full list, then ordered events). */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "kube/kube.h"
#include "base/monoclock.h"
#include "kube_internal.h"

struct ioq_kube_informer {
  struct ioq_kube *k;
  char *path;
  char *selector_q; /* "&fieldSelector=..." or "" */
  struct ioq_kube_informer_cb cb;
  void *ud;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  atomic_bool stop;
  atomic_bool synced;
  atomic_ulong lists;
  char rv[128];
  bool need_list;
  /* watch stream line assembly */
  CURL *watch; /* the transfer in progress, for its status */
  char *line;
  size_t line_len, line_cap;
  bool stream_failed;
  unsigned watch_events; /* events (bookmarks too) the current watch brought */
  char watch_err[256]; /* why the stream failed, when that calls for a backoff */
  struct ioq_kube_errbody err; /* the start of an error reply (a Status) */
  /* with cb.filter: the rules for a list page and for a watch event */
  struct ioq_jf_rule list_root, list_kids[3], ev_root, ev_kids[3];
  struct ioq_jf_rule *obj_kids; /* cb.filter + a Status's code and message */
  json_object *ev_obj;          /* the object of the event being read */
};

static const struct ioq_jf_rule list_meta_kids[] = {{"continue", 0, NULL},
                                                    {"resourceVersion", 0, NULL},
                                                    {NULL, 0, NULL}};

/* Builds the filter rules around cb.filter; -1 on OOM. */
static int build_rules(struct ioq_kube_informer *inf) {
  if (!inf->cb.filter)
    return 0;
  if (!inf->cb.item_cost_max)
    inf->cb.item_cost_max = 256 * 1024;
  size_t n = 0;
  while (inf->cb.filter[n].key)
    n++;
  inf->obj_kids = calloc(n + 3, sizeof *inf->obj_kids);
  if (!inf->obj_kids)
    return -1;
  memcpy(inf->obj_kids, inf->cb.filter, n * sizeof *inf->obj_kids);
  /* an ERROR event's object is a Status */
  inf->obj_kids[n] = (struct ioq_jf_rule){"code", 0, NULL};
  inf->obj_kids[n + 1] = (struct ioq_jf_rule){"message", 0, NULL};
  inf->list_kids[0] = (struct ioq_jf_rule){"metadata", 0, list_meta_kids};
  inf->list_kids[1] = (struct ioq_jf_rule){"items", IOQ_JF_UNIT, inf->cb.filter};
  inf->list_root = (struct ioq_jf_rule){"", 0, inf->list_kids};
  inf->ev_kids[0] = (struct ioq_jf_rule){"type", 0, NULL};
  inf->ev_kids[1] = (struct ioq_jf_rule){"object", IOQ_JF_UNIT, inf->obj_kids};
  inf->ev_root = (struct ioq_jf_rule){"", 0, inf->ev_kids};
  return 0;
}

/* list: each filtered item is a page of its own */
static void list_unit(void *ud, json_object *item, bool truncated) {
  struct ioq_kube_informer *inf = ud;
  (void)truncated; /* marked in the item */
  json_object *one = json_object_new_array();
  if (!one || json_object_array_add(one, json_object_get(item)) != 0) {
    json_object_put(one);
    ioq_error("kube list: out of memory delivering an item path=%s", inf->path);
    return;
  }
  inf->cb.list_page(inf->ud, one);
  json_object_put(one);
}

static void event_unit(void *ud, json_object *obj, bool truncated) {
  struct ioq_kube_informer *inf = ud;
  (void)truncated;
  json_object_put(inf->ev_obj);
  inf->ev_obj = json_object_get(obj);
}

/* Sleeps up to ms, returning early on stop. */
static void nap(struct ioq_kube_informer *inf, long ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&inf->lock);
  while (!atomic_load(&inf->stop))
    if (pthread_cond_timedwait(&inf->cond, &inf->lock, &ts) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&inf->lock);
}

static const char *obj_rv(json_object *obj) {
  json_object *m, *rv;
  if (json_object_object_get_ex(obj, "metadata", &m) &&
      json_object_object_get_ex(m, "resourceVersion", &rv) && json_object_is_type(rv, json_type_string))
    return json_object_get_string(rv);
  return NULL;
}

static void set_rv(struct ioq_kube_informer *inf, const char *rv) {
  if (rv)
    snprintf(inf->rv, sizeof inf->rv, "%s", rv);
}

/* Lists every page, handing each to list_page as it arrives. */
static int do_list(struct ioq_kube_informer *inf, ioq_err *e) {
  char cont[1024] = "";
  char rv[128] = "";
  inf->cb.list_begin(inf->ud);
  for (;;) {
    char *path;
    char *cesc = cont[0] ? ioq_kube_escape(cont) : NULL;
    int n = asprintf(&path, "%s?limit=%u%s%s%s", inf->path,
                     inf->cb.page_limit ? inf->cb.page_limit : 500u, inf->selector_q,
                     cesc ? "&continue=" : "", cesc ? cesc : "");
    free(cesc);
    if (n < 0) {
      inf->cb.list_end(inf->ud, false);
      return ioq_fail(e, ENOMEM, "out of memory building the list URL");
    }
    json_object *page = NULL;
    int rc = inf->cb.filter
                 ? ioq_kube_get_filtered(inf->k, path, &inf->stop, &inf->list_root,
                                         inf->cb.item_cost_max, list_unit, inf, &page, NULL, e)
                 : ioq_kube_get_json_until(inf->k, path, &inf->stop, &page, NULL, e);
    free(path);
    if (rc < 0) {
      inf->cb.list_end(inf->ud, false);
      return -1;
    }
    json_object *items, *meta, *c;
    if (!inf->cb.filter && json_object_object_get_ex(page, "items", &items) &&
        json_object_is_type(items, json_type_array))
      inf->cb.list_page(inf->ud, items);
    cont[0] = '\0';
    if (json_object_object_get_ex(page, "metadata", &meta)) {
      const char *prv = obj_rv(page);
      if (prv)
        snprintf(rv, sizeof rv, "%s", prv);
      if (json_object_object_get_ex(meta, "continue", &c) && json_object_is_type(c, json_type_string))
        snprintf(cont, sizeof cont, "%s", json_object_get_string(c));
    }
    json_object_put(page);
    if (!cont[0] || atomic_load(&inf->stop))
      break;
  }
  if (atomic_load(&inf->stop)) {
    inf->cb.list_end(inf->ud, false);
    return ioq_fail(e, ECANCELED, "stopped");
  }
  set_rv(inf, rv);
  /* counted before the consumer learns of it, so anything the consumer
   * makes visible (readiness) is never ahead of the count */
  atomic_store(&inf->lists, atomic_load(&inf->lists) + 1);
  atomic_store(&inf->synced, true);
  inf->cb.list_end(inf->ud, true);
  ioq_debug("kube list done path=%s items_rv=%s", inf->path, inf->rv);
  return 0;
}

static void handle_event_line(struct ioq_kube_informer *inf, const char *line, size_t len) {
  json_object *ev = NULL, *type, *obj = NULL;
  bool have_obj;
  ioq_err je = {0};
  if (inf->cb.filter) {
    /* refused (je says why): ev stays NULL, the event is reported below */
    if (ioq_jf_parse(&inf->ev_root, inf->cb.item_cost_max, line, len, event_unit, inf, &ev, &je) < 0)
      ev = NULL;
    have_obj = inf->ev_obj != NULL;
    obj = inf->ev_obj;
    inf->ev_obj = NULL;
  } else {
    ev = json_tokener_parse(line);
    have_obj = json_object_object_get_ex(ev, "object", &obj);
    obj = json_object_get(obj); /* one put below for both ways */
  }
  if (!ev || !json_object_object_get_ex(ev, "type", &type) || !have_obj) {
    json_object_put(obj);
    snprintf(inf->watch_err, sizeof inf->watch_err,
             "watch %s: unparsable event of %zu bytes%s%.80s%s: %.80s", inf->path, len,
             je.msg[0] ? " (" : "", je.msg, je.msg[0] ? ")" : "", line);
    inf->need_list = true;
    inf->stream_failed = true;
    json_object_put(ev);
    return;
  }
  const char *t = json_object_get_string(type);
  inf->watch_events++;
  if (strcmp(t, "BOOKMARK") == 0) {
    set_rv(inf, obj_rv(obj));
  } else if (strcmp(t, "ERROR") == 0) {
    /* a Status object; 410 Gone means our resourceVersion is too old */
    json_object *code, *msg;
    long c = json_object_object_get_ex(obj, "code", &code) ? (long)json_object_get_int(code) : 0;
    const char *m = json_object_object_get_ex(obj, "message", &msg) ? json_object_get_string(msg) : "";
    /* 410 is routine (a re-list at once); any other code is a failure
     * that a re-list at once would only repeat: back off */
    if (c == 410)
      ioq_info("kube watch expired path=%s rv=%s, re-listing (%s)", inf->path, inf->rv, m);
    else
      snprintf(inf->watch_err, sizeof inf->watch_err, "watch %s: ERROR event, code %ld: %.120s",
               inf->path, c, m);
    inf->need_list = true;
    inf->stream_failed = true;
  } else if (strcmp(t, "ADDED") == 0 || strcmp(t, "MODIFIED") == 0 || strcmp(t, "DELETED") == 0) {
    set_rv(inf, obj_rv(obj));
    inf->cb.on_event(inf->ud, t, obj);
  } else {
    ioq_debug("kube watch: ignoring event type=%s", t);
  }
  json_object_put(obj);
  json_object_put(ev);
}

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *ud) {
  struct ioq_kube_informer *inf = ud;
  size_t n = size * nmemb;
  /* an error reply (403, 429, 500...) is one Status, not a stream of
   * events: keep its start for the message */
  if (ioq_kube_errbody_take(&inf->err, inf->watch, ptr, n))
    return n;
  for (size_t i = 0; i < n; i++) {
    if (ptr[i] == '\n') {
      if (inf->line_len) {
        inf->line[inf->line_len] = '\0';
        handle_event_line(inf, inf->line, inf->line_len);
        inf->line_len = 0;
        if (inf->stream_failed)
          return 0; /* abort this watch */
      }
      continue;
    }
    if (inf->line_len + 2 > inf->line_cap) {
      size_t cap = inf->line_cap ? inf->line_cap * 2 : 65536;
      if (cap > (64u << 20)) {
        ioq_warn("kube watch: event larger than 64 MiB path=%s, re-listing", inf->path);
        inf->need_list = true;
        inf->stream_failed = true;
        return 0;
      }
      char *nl = realloc(inf->line, cap);
      if (!nl)
        return 0;
      inf->line = nl;
      inf->line_cap = cap;
    }
    inf->line[inf->line_len++] = ptr[i];
  }
  return n;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
  (void)a, (void)b, (void)c, (void)d;
  struct ioq_kube_informer *inf = ud;
  return atomic_load(&inf->stop) ? 1 : 0;
}

/* One watch request; returns 0 when the server ended it normally. */
static int do_watch(struct ioq_kube_informer *inf, ioq_err *e) {
  long server_timeout = 240 + rand() % 60; /* spread reconnects like client-go */
  char *path;
  if (asprintf(&path, "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%ld%s",
               inf->path, inf->rv, server_timeout, inf->selector_q) < 0)
    return ioq_fail(e, ENOMEM, "out of memory building the watch URL");
  struct curl_slist *hdrs = NULL;
  CURL *c = ioq_kube_curl_handle(inf->k, path, &hdrs, NULL, e);
  if (!c) {
    free(path);
    return -1;
  }
  char errbuf[CURL_ERROR_SIZE] = "";
  inf->line_len = 0;
  inf->stream_failed = false;
  inf->watch = c;
  inf->watch_events = 0;
  inf->watch_err[0] = '\0';
  ioq_kube_errbody_reset(&inf->err);
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, inf);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, inf);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, server_timeout + 30L);
  /* a stream that stops (a hung server or proxy with TCP still up) */
  long silence = inf->cb.watch_silence_s ? (long)inf->cb.watch_silence_s : IOQ_KUBE_WATCH_SILENCE_S;
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, silence);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  double t0 = ioq_mono_s();
  CURLcode rc = curl_easy_perform(c);
  double t1 = ioq_mono_s();
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  inf->watch = NULL;
  curl_slist_free_all(hdrs);
  free(path);
  if (atomic_load(&inf->stop))
    return 0;
  if (inf->stream_failed) {
    /* need_list is set; 410 re-lists at once, anything else backs off */
    if (inf->watch_err[0])
      return ioq_fail(e, EIO, "%s", inf->watch_err);
    return 0;
  }
  if (status == 410) {
    inf->need_list = true;
    return 0;
  }
  if (status != 0 && (status < 200 || status > 299)) {
    inf->need_list = true;
    json_object *st;
    const char *msg = ioq_kube_errbody_message(&inf->err, &st);
    ioq_fail(e, EIO, "watch %s: HTTP %ld: %.200s", inf->path, status, msg);
    json_object_put(st);
    return -1;
  }
  double lasted = t1 - t0;
  if (rc == CURLE_OPERATION_TIMEDOUT && status >= 200 && status <= 299 &&
      lasted < (double)server_timeout + 29.0) {
    /* the low-speed limit, not the overall timeout: the stream went silent;
     * re-open it from where it was (a 410 then re-lists) */
    ioq_warn("kube watch silent for %ld s path=%s rv=%s, reconnecting", silence, inf->path,
             inf->rv);
    return 0;
  }
  if (rc != CURLE_OK)
    return ioq_fail(e, EIO, "watch %s: %s", inf->path, errbuf[0] ? errbuf : curl_easy_strerror(rc));
  /* a stream that ends at once with nothing in it (a proxy cutting it, an
   * overloaded server) would be re-opened in a tight loop: back off, as
   * client-go's reflector does for a "very short watch" */
  if (lasted < 1.0 && inf->watch_events == 0)
    return ioq_fail(e, EIO, "watch %s: ended after %.2f s with no event", inf->path, lasted);
  return 0;
}

static void *informer_main(void *arg) {
  struct ioq_kube_informer *inf = arg;
  long backoff = 500;
  while (!atomic_load(&inf->stop)) {
    ioq_err e = {0};
    int rc = 0;
    if (inf->need_list) {
      rc = do_list(inf, &e);
      if (rc == 0)
        inf->need_list = false;
    }
    if (rc == 0 && !atomic_load(&inf->stop))
      rc = do_watch(inf, &e);
    if (atomic_load(&inf->stop))
      break;
    if (rc < 0) {
      ioq_warn("kube list/watch failed path=%s retry_in_ms=%ld error=\"%s\"", inf->path, backoff, e.msg);
      nap(inf, backoff);
      backoff = backoff * 2 > 30000 ? 30000 : backoff * 2;
    } else {
      backoff = 500;
    }
  }
  return NULL;
}

struct ioq_kube_informer *ioq_kube_informer_start(struct ioq_kube *k, const char *path,
                                                  const char *field_selector,
                                                  const struct ioq_kube_informer_cb *cb, void *ud,
                                                  ioq_err *e) {
  if (!cb || !cb->list_begin || !cb->list_page || !cb->list_end || !cb->on_event) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "informer: all four callbacks are required");
    return NULL;
  }
  struct ioq_kube_informer *inf = calloc(1, sizeof *inf);
  if (!inf) {
    ioq_fail(e, ENOMEM, "out of memory building the informer");
    return NULL;
  }
  inf->k = k;
  inf->path = strdup(path);
  char *sel = field_selector && *field_selector ? ioq_kube_escape(field_selector) : NULL;
  if (asprintf(&inf->selector_q, "%s%s", sel ? "&fieldSelector=" : "", sel ? sel : "") < 0)
    inf->selector_q = NULL;
  free(sel);
  inf->cb = *cb;
  inf->ud = ud;
  inf->need_list = true;
  pthread_mutex_init(&inf->lock, NULL);
  pthread_cond_init(&inf->cond, NULL);
  if (!inf->path || !inf->selector_q || build_rules(inf) < 0) {
    ioq_fail(e, ENOMEM, "out of memory building the informer's path, selector and filter rules");
    goto fail;
  }
  int rc = pthread_create(&inf->thread, NULL, informer_main, inf);
  if (rc != 0) {
    errno = rc;
    ioq_fail_errno(e, "informer: start thread for %s", path);
    goto fail;
  }
  return inf;
fail:
  free(inf->path);
  free(inf->selector_q);
  free(inf->obj_kids);
  pthread_mutex_destroy(&inf->lock);
  pthread_cond_destroy(&inf->cond);
  free(inf);
  return NULL;
}

bool ioq_kube_informer_synced(struct ioq_kube_informer *inf) { return atomic_load(&inf->synced); }
unsigned long ioq_kube_informer_lists(struct ioq_kube_informer *inf) { return atomic_load(&inf->lists); }

void ioq_kube_informer_stop(struct ioq_kube_informer *inf) {
  if (!inf)
    return;
  pthread_mutex_lock(&inf->lock);
  atomic_store(&inf->stop, true);
  pthread_cond_broadcast(&inf->cond);
  pthread_mutex_unlock(&inf->lock);
  pthread_join(inf->thread, NULL);
  free(inf->path);
  free(inf->selector_q);
  free(inf->obj_kids);
  free(inf->line);
  pthread_mutex_destroy(&inf->lock);
  pthread_cond_destroy(&inf->cond);
  free(inf);
}
