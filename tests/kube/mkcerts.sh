#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Test PKI for the kubeconfig tests, in DIR: a CA (ca.crt), the API server
# stand-in's certificate for 127.0.0.1 (server.crt/.key) and a client
# certificate with CN ioqos-test (client.crt/.key), all from that CA.
set -eu
d=$1
cd "$d"
ossl() { openssl "$@" 2>/dev/null; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=ioqos-test-ca -keyout ca.key -out ca.crt
for n in server client; do
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=$([ $n = server ] && echo 127.0.0.1 || echo ioqos-test)" -keyout $n.key -out $n.csr
  if [ $n = server ]; then
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > $n.ext
  else
    printf 'extendedKeyUsage=clientAuth\n' > $n.ext
  fi
  ossl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile $n.ext -out $n.crt
done
