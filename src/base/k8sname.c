// SPDX-License-Identifier: Apache-2.0
#include "base/k8sname.h"

#include <string.h>

static bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* n characters at s of the label form (the 63-character limit of a
 * namespace does not apply to the parts of a subdomain) */
static bool label(const char *s, size_t n) {
  if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
    return false;
  for (size_t i = 1; i + 1 < n; i++)
    if (!alnum(s[i]) && s[i] != '-')
      return false;
  return true;
}

bool ioq_k8s_label_valid(const char *s) {
  size_t n = s ? strnlen(s, 64) : 0;
  return n <= 63 && label(s, n);
}

bool ioq_k8s_subdomain_valid(const char *s) {
  if (!s)
    return false;
  size_t n = strnlen(s, 254);
  if (n == 0 || n > 253)
    return false;
  /* every dot-separated part has the label form: no empty part, so no "." or ".." */
  for (const char *p = s, *end = s + n;;) {
    const char *dot = memchr(p, '.', (size_t)(end - p));
    if (!label(p, dot ? (size_t)(dot - p) : (size_t)(end - p)))
      return false;
    if (!dot)
      return true;
    p = dot + 1;
  }
}
