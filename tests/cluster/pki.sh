#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The test cluster's PKI in DIR (made once per run; nothing here is a secret
# worth keeping): one CA for every client and serving certificate, the
# service-account signing key, and a kubeconfig per component.
#
#   tests/cluster/pki.sh DIR SERVER_URL_HOST SERVER_URL_GUEST NODE_NAME
#
# SERVER_URL_HOST is how host processes reach the apiserver (https://127.0.0.1:PORT),
# SERVER_URL_GUEST how the node in the VM does (https://10.0.2.2:PORT: qemu's
# user-mode network maps 10.0.2.2 to the host's loopback).
set -eu
[ $# -eq 4 ] || { echo "usage: pki.sh DIR SERVER_URL_HOST SERVER_URL_GUEST NODE_NAME" >&2; exit 2; }
d=$1 host_url=$2 guest_url=$3 node=$4
command -v openssl >/dev/null || { echo "pki.sh: openssl is not installed" >&2; exit 1; }
mkdir -p "$d"
d=$(cd "$d" && pwd)
cd "$d"
umask 077
ossl() { openssl "$@" 2>/dev/null || { echo "pki.sh: openssl $1 failed" >&2; exit 1; }; }

ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
  -subj "/CN=ioqos-test-cluster-ca" -keyout ca.key -out ca.crt
# service-account token signing key (RSA: the issuer's default algorithm RS256)
ossl genrsa -out sa.key 2048
ossl rsa -in sa.key -pubout -out sa.pub

# cert NAME SUBJECT EXT
cert() {
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$2" \
    -keyout "$1.key" -out "$1.csr"
  printf '%s\n' "$3" > "$1.ext"
  ossl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 \
    -extfile "$1.ext" -out "$1.crt"
  rm -f "$1.csr" "$1.ext"
}
client="basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
# The apiserver is dialled as 127.0.0.1 (host), 10.0.2.2 (the VM node) and
# 10.0.0.1 / kubernetes.default.svc (pods, through the Service).
cert apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.2.2,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=ioqos-test-admin" "$client"
cert controller-manager "/CN=system:kube-controller-manager" "$client"
cert scheduler "/CN=system:kube-scheduler" "$client"
cert kube-proxy "/CN=system:kube-proxy" "$client"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
cert kubelet "/O=system:nodes/CN=system:node:$node" "$client"
cert kubelet-serving "/O=system:nodes/CN=system:node:$node" "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:10.0.2.15,DNS:$node"

# kubeconfig NAME CERT URL
kubeconfig() {
  cat > "$1.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: ioqos-test
  cluster:
    server: $3
    certificate-authority: $d/ca.crt
users:
- name: $2
  user:
    client-certificate: $d/$2.crt
    client-key: $d/$2.key
contexts:
- name: ioqos-test
  context: {cluster: ioqos-test, user: $2}
current-context: ioqos-test
YAML
}
kubeconfig admin admin "$host_url"
kubeconfig admin-guest admin "$guest_url"
kubeconfig controller-manager controller-manager "$host_url"
kubeconfig scheduler scheduler "$host_url"
kubeconfig kubelet kubelet "$guest_url"
kubeconfig kube-proxy kube-proxy "$guest_url"
chmod 0644 ./*.crt ./*.kubeconfig
