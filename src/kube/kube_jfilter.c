// SPDX-License-Identifier: Apache-2.0
/* Streaming JSON filter: yajl events in, a json-c tree of the wanted fields
 * out (see kube_jfilter.h). Only kept containers take a frame, so memory is
 * the kept tree (bounded by the cost budget) plus yajl's own state (one
 * token and one byte per nesting level). */
#include "kube/kube_jfilter.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yajl/yajl_parse.h>

#define VALUE_COST 64 /* a json_object and its slot in the parent, roughly */

struct frame {
  json_object *v;                   /* the object or array being built */
  const struct ioq_jf_rule *rule;   /* the rule that kept it */
  bool unit_root;
  char *key;                        /* objects: the member whose value comes next */
  const struct ioq_jf_rule *key_rule; /* its rule; NULL = skip its value */
};

struct ioq_jf {
  yajl_handle h;
  struct ioq_jf_rule root_rule;
  size_t cap;
  ioq_jf_unit_fn on_unit;
  void *ud;
  struct frame *st;
  size_t depth, st_cap;
  size_t skip; /* nesting depth inside a skipped container (0: not skipping) */
  bool in_unit, unit_trunc;
  size_t unit_cost, root_cost;
  json_object *root;
  ioq_err err;
  bool failed;
};

static int fail(struct ioq_jf *f, int code, const char *what) {
  if (!f->failed)
    ioq_fail(&f->err, code, "%s", what);
  f->failed = true;
  return 0; /* cancels the parse */
}

/* Charges n to the budget of where the value goes; false: skip it. */
static bool charge(struct ioq_jf *f, size_t n) {
  if (f->in_unit) {
    if (f->unit_trunc || f->unit_cost + n > f->cap) {
      f->unit_trunc = true;
      return false;
    }
    f->unit_cost += n;
    return true;
  }
  if (f->root_cost + n > f->cap) {
    fail(f, EFBIG, "JSON: the fields kept outside its items exceed the cost budget");
    return false;
  }
  f->root_cost += n;
  return true;
}

static void drop_key(struct frame *fr) {
  free(fr->key);
  fr->key = NULL;
  fr->key_rule = NULL;
}

/* The rule for the value that starts now; NULL: skip it. *unit_root: it
 * starts a unit. */
static const struct ioq_jf_rule *slot(struct ioq_jf *f, bool is_array, bool *unit_root) {
  *unit_root = false;
  const struct ioq_jf_rule *r;
  if (f->depth == 0) {
    r = &f->root_rule;
  } else {
    struct frame *top = &f->st[f->depth - 1];
    r = json_object_is_type(top->v, json_type_object) ? top->key_rule : top->rule;
  }
  if (!r)
    return NULL;
  /* an array of units is not one: its elements are */
  if ((r->flags & IOQ_JF_UNIT) && !f->in_unit && !is_array) {
    f->in_unit = true;
    f->unit_trunc = false;
    f->unit_cost = 0;
    *unit_root = true;
  }
  return r;
}

/* Hands a finished value to its parent, the unit callback or the root. */
static int attach(struct ioq_jf *f, json_object *v, bool unit_root) {
  if (unit_root) {
    if (f->unit_trunc && json_object_is_type(v, json_type_object))
      json_object_object_add(v, IOQ_JF_TRUNCATED_KEY, json_object_new_boolean(1));
    bool trunc = f->unit_trunc;
    f->in_unit = false;
    if (f->on_unit)
      f->on_unit(f->ud, v, trunc);
    json_object_put(v);
    return 1;
  }
  if (f->depth == 0) {
    json_object_put(f->root);
    f->root = v;
    return 1;
  }
  struct frame *top = &f->st[f->depth - 1];
  if (json_object_is_type(top->v, json_type_object)) {
    int rc = json_object_object_add(top->v, top->key, v);
    drop_key(top);
    if (rc != 0) {
      json_object_put(v);
      return fail(f, ENOMEM, "JSON: out of memory adding a member to an object");
    }
  } else if (json_object_array_add(top->v, v) != 0) {
    json_object_put(v);
    return fail(f, ENOMEM, "JSON: out of memory adding an element to an array");
  }
  return 1;
}

/* A scalar: kept (attached) or skipped. */
static int scalar(struct ioq_jf *f, json_object *(*make)(const void *, size_t), const void *p,
                  size_t len) {
  if (f->skip)
    return 1;
  bool unit_root;
  const struct ioq_jf_rule *r = slot(f, false, &unit_root);
  if (!r || !charge(f, VALUE_COST + len)) {
    if (unit_root) { /* a unit that is one over-budget scalar: nothing to deliver */
      f->in_unit = false;
    }
    if (f->depth && json_object_is_type(f->st[f->depth - 1].v, json_type_object))
      drop_key(&f->st[f->depth - 1]);
    return f->failed ? 0 : 1;
  }
  json_object *v = make ? make(p, len) : NULL; /* a JSON null is a NULL json_object */
  if (!v && make)
    return fail(f, ENOMEM, "JSON: out of memory building a scalar value");
  return attach(f, v, unit_root);
}

static json_object *mk_string(const void *p, size_t len) {
  return json_object_new_string_len(p, (int)len);
}
static json_object *mk_true(const void *p, size_t len) {
  (void)p, (void)len;
  return json_object_new_boolean(1);
}
static json_object *mk_false(const void *p, size_t len) {
  (void)p, (void)len;
  return json_object_new_boolean(0);
}
/* numbers as json-c's own parser reads them (int64, else double keeping
 * the text), so consumers see what they saw before */
static json_object *mk_number(const void *p, size_t len) {
  char *s = strndup(p, len);
  json_object *v = s ? json_tokener_parse(s) : NULL;
  free(s);
  return v;
}

static int cb_null(void *ctx) { return scalar(ctx, NULL, NULL, 0); }
static int cb_bool(void *ctx, int b) { return scalar(ctx, b ? mk_true : mk_false, NULL, 0); }
static int cb_number(void *ctx, const char *s, size_t len) { return scalar(ctx, mk_number, s, len); }
static int cb_string(void *ctx, const unsigned char *s, size_t len) {
  return scalar(ctx, mk_string, s, len);
}

static int start(struct ioq_jf *f, bool is_array) {
  if (f->skip) {
    f->skip++;
    return 1;
  }
  bool unit_root;
  const struct ioq_jf_rule *r = slot(f, is_array, &unit_root);
  if (!r || !charge(f, VALUE_COST)) {
    if (f->failed)
      return 0;
    if (unit_root)
      f->in_unit = false;
    if (f->depth && json_object_is_type(f->st[f->depth - 1].v, json_type_object))
      drop_key(&f->st[f->depth - 1]);
    f->skip = 1;
    return 1;
  }
  struct frame *ns = ioq_grow(f->st, &f->st_cap, f->depth + 1, sizeof *ns, 16);
  if (!ns)
    return fail(f, ENOMEM, "JSON: out of memory growing the nesting stack");
  f->st = ns;
  json_object *v = is_array ? json_object_new_array() : json_object_new_object();
  if (!v)
    return fail(f, ENOMEM, "JSON: out of memory building an object or array");
  f->st[f->depth++] = (struct frame){.v = v, .rule = r, .unit_root = unit_root};
  return 1;
}

static int finish_container(struct ioq_jf *f) {
  if (f->skip) {
    f->skip--;
    return 1;
  }
  struct frame fr = f->st[--f->depth];
  free(fr.key);
  return attach(f, fr.v, fr.unit_root);
}

static int cb_start_map(void *ctx) { return start(ctx, false); }
static int cb_start_array(void *ctx) { return start(ctx, true); }
static int cb_end(void *ctx) { return finish_container(ctx); }

static bool key_is(const struct ioq_jf_rule *r, const unsigned char *k, size_t len) {
  if (strlen(r->key) != len)
    return false;
  return (r->flags & IOQ_JF_ICASE) ? strncasecmp(r->key, (const char *)k, len) == 0
                                   : memcmp(r->key, k, len) == 0;
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t len) {
  struct ioq_jf *f = ctx;
  if (f->skip)
    return 1;
  struct frame *top = &f->st[f->depth - 1];
  drop_key(top);
  const struct ioq_jf_rule *r = NULL;
  if (!top->rule->kids) {
    r = top->rule; /* keep everything below */
  } else {
    for (const struct ioq_jf_rule *c = top->rule->kids; c->key && !r; c++)
      if (key_is(c, k, len))
        r = c;
  }
  if (!r || !charge(f, len))
    return f->failed ? 0 : 1;
  top->key = strndup((const char *)k, len);
  if (!top->key)
    return fail(f, ENOMEM, "JSON: out of memory keeping a member name");
  top->key_rule = r;
  return 1;
}

static const yajl_callbacks callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_map_key,
    .yajl_end_map = cb_end,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end,
};

struct ioq_jf *ioq_jf_new(const struct ioq_jf_rule *root, size_t unit_cost_max,
                          ioq_jf_unit_fn on_unit, void *ud, ioq_err *e) {
  struct ioq_jf *f = calloc(1, sizeof *f);
  if (!f) {
    ioq_fail(e, ENOMEM, "out of memory building the JSON filter");
    return NULL;
  }
  f->root_rule = *root;
  f->root_rule.key = "";
  f->cap = unit_cost_max;
  f->on_unit = on_unit;
  f->ud = ud;
  f->h = yajl_alloc(&callbacks, NULL, f);
  if (!f->h) {
    free(f);
    ioq_fail(e, ENOMEM, "out of memory building the JSON filter's parser");
    return NULL;
  }
  return f;
}

/* yajl's message for a syntax error, or ours for a cancel */
static int parse_error(struct ioq_jf *f, const char *buf, size_t len, ioq_err *e) {
  if (f->failed) {
    *e = f->err;
    return -1;
  }
  unsigned char *m = yajl_get_error(f->h, 0, (const unsigned char *)buf, len);
  ioq_fail(e, IOQ_EINVAL_INPUT, "invalid JSON: %s", m ? (char *)m : "parse error");
  if (m)
    yajl_free_error(f->h, m);
  return -1;
}

int ioq_jf_feed(struct ioq_jf *f, const char *buf, size_t len, ioq_err *e) {
  if (yajl_parse(f->h, (const unsigned char *)buf, len) != yajl_status_ok)
    return parse_error(f, buf, len, e);
  return 0;
}

int ioq_jf_finish(struct ioq_jf *f, json_object **root, ioq_err *e) {
  if (root)
    *root = NULL;
  if (yajl_complete_parse(f->h) != yajl_status_ok)
    return parse_error(f, NULL, 0, e);
  if (root) {
    *root = f->root;
    f->root = NULL;
  }
  return 0;
}

void ioq_jf_free(struct ioq_jf *f) {
  if (!f)
    return;
  yajl_free(f->h);
  for (size_t i = 0; i < f->depth; i++) {
    free(f->st[i].key);
    json_object_put(f->st[i].v);
  }
  free(f->st);
  json_object_put(f->root);
  free(f);
}

int ioq_jf_parse(const struct ioq_jf_rule *root, size_t unit_cost_max, const char *text,
                 size_t len, ioq_jf_unit_fn on_unit, void *ud, json_object **out, ioq_err *e) {
  struct ioq_jf *f = ioq_jf_new(root, unit_cost_max, on_unit, ud, e);
  if (!f)
    return -1;
  int rc = ioq_jf_feed(f, text, len, e);
  if (rc == 0)
    rc = ioq_jf_finish(f, out, e);
  ioq_jf_free(f);
  return rc;
}
