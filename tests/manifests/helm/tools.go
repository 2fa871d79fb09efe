// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package tools pins helm, built from source for the chart checks.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
