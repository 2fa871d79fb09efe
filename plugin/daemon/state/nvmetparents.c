// SPDX-License-Identifier: Apache-2.0
#include "nvmetparents.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "config/config.h"
#include "base/fsutil.h"
#include "base/jsonfield.h"
#include "base/jsonparse.h"

#define NVMET_PARENTS_VERSION 1
#define NVMET_PARENTS_FILE_MAX (64 * 1024)

static void clear(struct nvmet_parents *ps) {
  for (size_t i = 0; i < ps->n; i++)
    free(ps->v[i]);
  ps->n = 0;
}

void nvmet_parents_free(struct nvmet_parents *ps) {
  clear(ps);
  free(ps->path);
  ps->path = NULL;
}

bool nvmet_parents_has(const struct nvmet_parents *ps, const char *parent) {
  for (size_t i = 0; i < ps->n; i++)
    if (!strcmp(ps->v[i], parent))
      return true;
  return false;
}

static int save(const struct nvmet_parents *ps, ioq_err *e) {
  if (!ps->path)
    return 0;
  json_object *root = json_object_new_object(), *arr = json_object_new_array();
  if (!root || !arr) {
    json_object_put(root);
    json_object_put(arr);
    return ioq_fail(e, ENOMEM, "out of memory (%s)", ps->path);
  }
  json_object_object_add(root, "version", json_object_new_int(NVMET_PARENTS_VERSION));
  for (size_t i = 0; i < ps->n; i++)
    json_object_array_add(arr, json_object_new_string(ps->v[i]));
  json_object_object_add(root, "parents", arr);
  const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
  int rc = text ? ioq_write_file_atomic(ps->path, text, e)
                : ioq_fail(e, ENOMEM, "out of memory (%s)", ps->path);
  json_object_put(root);
  return rc;
}

static int parse(struct nvmet_parents *ps, json_object *root, ioq_err *e) {
  json_object *ver = ioq_json_field(root, "version"), *arr = ioq_json_field(root, "parents");
  if (!ver || !json_object_is_type(ver, json_type_int) ||
      json_object_get_int(ver) != NVMET_PARENTS_VERSION)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: version is not %d", ps->path,
                    NVMET_PARENTS_VERSION);
  if (!arr || !json_object_is_type(arr, json_type_array) ||
      json_object_array_length(arr) > NVMET_PARENTS_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: parents is not an array of at most %d", ps->path,
                    NVMET_PARENTS_MAX);
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *j = json_object_array_get_idx(arr, i);
    if (!json_object_is_type(j, json_type_string))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: parents[%zu] is not a string", ps->path, i);
    const char *s = json_object_get_string(j), *why = ioq_nvmet_parent_problem(s);
    if (why)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: parents[%zu] %s", ps->path, i, why);
    if (nvmet_parents_has(ps, s))
      continue;
    if (!(ps->v[ps->n] = strdup(s)))
      return ioq_fail(e, ENOMEM, "out of memory (%s)", ps->path);
    ps->n++;
  }
  return 0;
}

int nvmet_parents_load(struct nvmet_parents *ps, const char *path, ioq_err *e) {
  memset(ps, 0, sizeof *ps);
  if (!path)
    return 0;
  if (!(ps->path = strdup(path)))
    return ioq_fail(e, ENOMEM, "out of memory (%s)", path);
  if (!ioq_path_exists(path))
    return 0;
  char *text = NULL;
  size_t len = 0;
  if (ioq_read_file(path, &text, &len, NVMET_PARENTS_FILE_MAX, e) < 0)
    return -1;
  json_object *root = NULL;
  int rc = ioq_json_parse_strict(text, len, NVMET_PARENTS_FILE_MAX, path, &root, e);
  free(text);
  if (rc == 0)
    rc = parse(ps, root, e);
  json_object_put(root);
  if (rc < 0)
    clear(ps);
  return rc;
}

int nvmet_parents_add(struct nvmet_parents *ps, const char *parent, ioq_err *e) {
  if (nvmet_parents_has(ps, parent))
    return 0;
  if (ps->n == NVMET_PARENTS_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "%s: already %d earlier nvmet.parent cgroups not yet removed; %s not "
                    "recorded",
                    ps->path ? ps->path : NVMET_PARENTS_FILE, NVMET_PARENTS_MAX, parent);
  if (!(ps->v[ps->n] = strdup(parent)))
    return ioq_fail(e, ENOMEM, "out of memory (nvmet parents)");
  ps->n++;
  if (save(ps, e) < 0) {
    free(ps->v[--ps->n]);
    return -1;
  }
  return 0;
}

int nvmet_parents_drop(struct nvmet_parents *ps, const char *parent, ioq_err *e) {
  for (size_t i = 0; i < ps->n; i++)
    if (!strcmp(ps->v[i], parent)) {
      /* the list without it is saved first; only then is it changed */
      struct nvmet_parents next = *ps;
      memmove(&next.v[i], &next.v[i + 1], (next.n - i - 1) * sizeof next.v[0]);
      next.n--;
      if (save(&next, e) < 0)
        return -1;
      free(ps->v[i]);
      *ps = next;
      return 0;
    }
  return 0;
}
