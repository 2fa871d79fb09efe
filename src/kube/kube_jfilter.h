// SPDX-License-Identifier: Apache-2.0
/* A streaming JSON reader (yajl events) that builds a json-c tree of only
 * the fields a rule tree names, so a huge object made of fields ioqos does
 * not read (a pod's 30 000 env entries, its managedFields) costs parse time
 * but no memory.
 *
 * Rules: a value matched by a rule is kept. If it is an object, its members
 * are matched against the rule's kids (kids NULL: everything below is kept);
 * if it is an array, each element is matched against the same rule. Members
 * no rule names are skipped without building anything.
 *
 * Units: a value matched by a rule with IOQ_JF_UNIT (each element, for an
 * array) is handed to on_unit when complete instead of being attached to its
 * parent (a list's items arrive one at a time). Each unit may keep at most
 * `unit_cost_max` (64 per value plus the bytes of its keys and strings); past
 * that, what follows in the unit is skipped and the unit is delivered with
 * the member IOQ_JF_TRUNCATED_KEY set to true. The kept tree outside units
 * has the same budget; exceeding it fails the parse (EFBIG).
 */
#ifndef IOQOS_KUBE_JFILTER_H
#define IOQOS_KUBE_JFILTER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* Member of a filtered unit that says the unit was cut at its cost budget.
 * No Kubernetes field has this name, and a unit's members pass the rules, so
 * only the filter sets it. */
#define IOQ_JF_TRUNCATED_KEY "ioqos:truncated"

enum {
  IOQ_JF_ICASE = 1, /* a Go struct field: the key matches ignoring ASCII case */
  IOQ_JF_UNIT = 2,  /* see above */
};

struct ioq_jf_rule {
  const char *key;                 /* NULL ends a list of rules */
  unsigned flags;
  const struct ioq_jf_rule *kids;  /* NULL: keep the whole value */
};

/* the root value: kids and flags apply to it, the key is ignored */
struct ioq_jf;

typedef void (*ioq_jf_unit_fn)(void *ud, json_object *unit, bool truncated);

struct ioq_jf *ioq_jf_new(const struct ioq_jf_rule *root, size_t unit_cost_max,
                          ioq_jf_unit_fn on_unit, void *ud, ioq_err *e)
    __attribute__((warn_unused_result));
/* Feeds len bytes; -1 on a JSON error, an over-budget root or OOM. */
int ioq_jf_feed(struct ioq_jf *f, const char *buf, size_t len, ioq_err *e)
    __attribute__((warn_unused_result));
/* Ends the input; *root (may be NULL) receives the kept root value (NULL if
 * the root was a unit). */
int ioq_jf_finish(struct ioq_jf *f, json_object **root, ioq_err *e)
    __attribute__((warn_unused_result));
void ioq_jf_free(struct ioq_jf *f);

/* One whole text at once. */
int ioq_jf_parse(const struct ioq_jf_rule *root, size_t unit_cost_max, const char *text,
                 size_t len, ioq_jf_unit_fn on_unit, void *ud, json_object **out, ioq_err *e)
    __attribute__((warn_unused_result));

#endif
