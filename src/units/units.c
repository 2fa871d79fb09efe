// SPDX-License-Identifier: Apache-2.0
#include "units/units.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const g_names[IOQ_RES_COUNT] = {IOQ_RESOURCE_BANDWIDTH, IOQ_RESOURCE_IOPS};
static const char *const g_short[IOQ_RES_COUNT] = {"bandwidth", "iops"};
static const char *const g_idtag[IOQ_RES_COUNT] = {"bw", "iops"};

const char *ioq_resource_name(enum ioq_resource r) {
  return (unsigned)r < IOQ_RES_COUNT ? g_names[r] : "?";
}

const char *ioq_resource_short(enum ioq_resource r) {
  return (unsigned)r < IOQ_RES_COUNT ? g_short[r] : "?";
}

int ioq_resource_from_name(const char *name, enum ioq_resource *out) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (name && strcmp(name, g_names[r]) == 0) {
      *out = (enum ioq_resource)r;
      return 0;
    }
  return -1;
}

void ioq_unit_sizes_default(struct ioq_unit_sizes *u) {
  u->size[IOQ_RES_BANDWIDTH] = IOQ_DEFAULT_UNIT_BW_BYTES;
  u->size[IOQ_RES_IOPS] = IOQ_DEFAULT_UNIT_IOPS;
}

/* Kubernetes quantity suffixes (resource.Quantity): binary Ki..Ei, decimal
 * k, M, G, T, P, E; "m" (milli) and decimal exponents are also legal. */
int ioq_parse_quantity_int(const char *s, uint64_t *out, ioq_err *e) {
  if (!s || !*s)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "empty quantity");
  const char *p = s;
  if (*p == '+')
    p++;
  if (*p == '-')
    return ioq_fail(e, IOQ_EINVAL_INPUT, "quantity '%s' is negative", s);
  /* Integer and fractional digits, kept exact as a decimal mantissa. */
  uint64_t mant = 0;
  int frac_digits = 0, ndigits = 0;
  bool dot = false;
  for (; *p && (isdigit((unsigned char)*p) || *p == '.'); p++) {
    if (*p == '.') {
      if (dot)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "quantity '%s' has two decimal points", s);
      dot = true;
      continue;
    }
    if (mant > (UINT64_MAX - 9) / 10)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "quantity '%s' is too large", s);
    mant = mant * 10 + (uint64_t)(*p - '0');
    ndigits++;
    if (dot)
      frac_digits++;
  }
  if (ndigits == 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "quantity '%s' has no digits", s);

  uint64_t mul = 1;
  int exp10 = 0; /* extra decimal exponent (e.g. "m" = -3, "e3" = 3) */
  if (*p) {
    static const struct { const char *sfx; uint64_t mul; int exp10; } sfx[] = {
        {"Ki", 1ull << 10, 0}, {"Mi", 1ull << 20, 0}, {"Gi", 1ull << 30, 0},
        {"Ti", 1ull << 40, 0}, {"Pi", 1ull << 50, 0}, {"Ei", 1ull << 60, 0},
        {"k", 1, 3},           {"M", 1, 6},           {"G", 1, 9},
        {"T", 1, 12},          {"P", 1, 15},          {"E", 1, 18},
        {"m", 1, -3},
    };
    bool found = false;
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++)
      if (strcmp(p, sfx[i].sfx) == 0) {
        mul = sfx[i].mul;
        exp10 = sfx[i].exp10;
        found = true;
        break;
      }
    if (!found && (*p == 'e' || *p == 'E') && p[1]) {
      char *end;
      errno = 0;
      long x = strtol(p + 1, &end, 10);
      if (!errno && !*end && x > -30 && x < 30) {
        exp10 = (int)x;
        found = true;
      }
    }
    if (!found)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "quantity '%s' has an unknown suffix '%s'", s, p);
  }
  /* exact in 128 bits: the binary multiplier first, so "1.5Ki" is 1536 */
  unsigned __int128 v = (unsigned __int128)mant * mul;
  exp10 -= frac_digits;
  for (; exp10 > 0; exp10--) {
    if (v > UINT64_MAX)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "quantity '%s' is too large", s);
    v *= 10;
  }
  for (; exp10 < 0; exp10++) {
    if (v % 10 != 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "quantity '%s' is not a whole number (ioqos resources count whole units)", s);
    v /= 10;
  }
  if (v > UINT64_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "quantity '%s' is too large", s);
  *out = (uint64_t)v;
  return 0;
}

bool ioq_disk_name_valid(const char *name) {
  size_t n = name ? strlen(name) : 0;
  /* a disk name becomes a path component under /sys/class/block */
  if (n == 0 || n > IOQ_DISK_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!(isalnum(c) || c == '.' || c == '_' || c == '!' || c == '+' || c == '-'))
      return false;
  }
  return true;
}

int ioq_unit_id_format(char *out, size_t outsz, const char *disk, enum ioq_resource r,
                       uint32_t index, ioq_err *e) {
  if (!ioq_disk_name_valid(disk))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "disk name '%s' cannot be used in a unit ID", disk);
  if ((unsigned)r >= IOQ_RES_COUNT)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unknown resource %d", (int)r);
  int n = snprintf(out, outsz, "%s-%s-%" PRIu32, disk, g_idtag[r], index);
  if (n < 0 || (size_t)n >= outsz || n > IOQ_UNIT_ID_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID for disk '%s' index %" PRIu32
                    " would exceed %d characters", disk, index, IOQ_UNIT_ID_MAX);
  return 0;
}

int ioq_unit_id_parse(const char *id, struct ioq_unit_id *out, ioq_err *e) {
  size_t n = id ? strlen(id) : 0;
  if (n == 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "empty unit ID");
  if (n > IOQ_UNIT_ID_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%.80s...' is longer than %d characters",
                    id, IOQ_UNIT_ID_MAX);
  const char *idx = strrchr(id, '-');
  if (!idx || idx == id)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%s' is not DISK-RES-INDEX", id);
  const char *res_end = idx;
  const char *res = res_end - 1;
  while (res > id && *res != '-')
    res--;
  if (*res != '-' || res == id)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%s' is not DISK-RES-INDEX", id);
  res++;
  idx++;
  /* index: decimal, no sign, no leading zeros, fits uint32 */
  if (!*idx || !isdigit((unsigned char)*idx) || (idx[0] == '0' && idx[1]))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%s' has a malformed index '%s'", id, idx);
  uint64_t v = 0;
  for (const char *q = idx; *q; q++) {
    if (!isdigit((unsigned char)*q))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%s' has a malformed index '%s'", id, idx);
    v = v * 10 + (uint64_t)(*q - '0');
    if (v > UINT32_MAX)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%s' index is out of range", id);
  }
  size_t reslen = (size_t)(res_end - res);
  int r = -1;
  for (int i = 0; i < IOQ_RES_COUNT; i++)
    if (strlen(g_idtag[i]) == reslen && strncmp(res, g_idtag[i], reslen) == 0)
      r = i;
  if (r < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%s' names unknown resource '%.*s' (want bw or iops)",
                    id, (int)reslen, res);
  size_t disklen = (size_t)(res - 1 - id);
  if (disklen == 0 || disklen > IOQ_DISK_NAME_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%s' has an invalid disk name", id);
  memcpy(out->disk, id, disklen);
  out->disk[disklen] = '\0';
  if (!ioq_disk_name_valid(out->disk))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unit ID '%s' has an invalid disk name '%s'", id, out->disk);
  out->res = (enum ioq_resource)r;
  out->index = (uint32_t)v;
  return 0;
}

static int cmp_id(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void ioq_ids_sort(const char **ids, size_t n) {
  if (n > 1)
    qsort(ids, n, sizeof *ids, cmp_id);
}

long ioq_ids_find(const char *const *sorted, size_t n, const char *id) {
  if (!n)
    return -1;
  const char *const *hit = bsearch(&id, sorted, n, sizeof *sorted, cmp_id);
  return hit ? (long)(hit - sorted) : -1;
}
