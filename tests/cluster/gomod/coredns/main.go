// SPDX-License-Identifier: Apache-2.0

// Command coredns is CoreDNS with the plugins the ioqos test node needs: the
// cluster DNS for Service names (kubernetes), health and readiness, and a
// cache. The plugin chain is chosen at compile time as CoreDNS documents
// (plugin.cfg); this is that list, in CoreDNS's directive order.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"errors", "log", "health", "ready", "kubernetes", "cache", "loadbalance"}
}

func main() { coremain.Run() }
