// SPDX-License-Identifier: Apache-2.0
/* Kubernetes object names as the API server itself validates them
 * (DNS-1123). Names that arrive from kubelet (pod resources) or from API
 * objects go into URL paths only after these checks, so "." and "..", '/'
 * and anything percent-encoded can never change which object a request
 * reaches (libcurl removes dot segments from a path). */
#ifndef IOQOS_K8SNAME_H
#define IOQOS_K8SNAME_H

#include <stdbool.h>

/* Namespaces: 1-63 of a-z, 0-9, '-', starting and ending alphanumeric. */
bool ioq_k8s_label_valid(const char *s);

/* Pod and node names: DNS-1123 labels joined by '.', at most 253 in all. */
bool ioq_k8s_subdomain_valid(const char *s);

#endif
