#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Creates (or renews) the certificates of the extender's mutual TLS and the
# Kubernetes Secrets that carry them (docs/extender.md, "Mutual TLS"):
#
#   ca.crt, ca.key          a private CA (kept; reused by later runs)
#   server.crt, server.key  the extender's serving certificate (its Service names)
#   client.crt, client.key  the client certificate kube-scheduler presents
#                           (CN=ioqos-scheduler, extended key usage clientAuth)
#   secrets.yaml            Secret ioqos-scheduler-ext-tls    (tls.crt, tls.key, ca.crt)
#                           Secret ioqos-scheduler-ext-client (tls.crt, tls.key, ca.crt)
#
# Rotate: run it again with the same OUTDIR and apply secrets.yaml. The CA is
# kept, so certificates issued before stay valid until they expire; the
# extender re-reads its files when kubelet updates the mounted Secret.
#
# Usage: scripts/extender-certs.sh [-o OUTDIR] [-n NAMESPACE] [-d DAYS]
#                                  [-i IP]... [--new-ca]
#   -o OUTDIR     where the files go (default ./ioqos-extender-certs)
#   -n NAMESPACE  namespace of the extender and of the Secrets (default ioqos-system)
#   -d DAYS       validity of the server and client certificates (default 365)
#   -i IP         also an IP address in the server certificate (the Service's
#                 ClusterIP, which a host-network kube-scheduler dials); repeatable
#   --new-ca      make a new CA even if OUTDIR has one (then every certificate
#                 issued by the old CA is refused once the extender reloads)
set -eu

out=./ioqos-extender-certs
ns=ioqos-system
days=365
ips=""
new_ca=0
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift 2 ;;
    -n) ns=$2; shift 2 ;;
    -d) days=$2; shift 2 ;;
    -i) ips="$ips $2"; shift 2 ;;
    --new-ca) new_ca=1; shift ;;
    -h|--help) sed -n '3,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "extender-certs.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$days" in ''|*[!0-9]*) echo "extender-certs.sh: -d needs a number of days" >&2; exit 2 ;; esac
command -v openssl >/dev/null || { echo "extender-certs.sh: openssl is not installed" >&2; exit 1; }

svc=ioqos-scheduler-ext
umask 077
mkdir -p "$out"
cd "$out"

if [ "$new_ca" = 1 ] || [ ! -s ca.key ] || [ ! -s ca.crt ]; then
  openssl req -x509 -newkey rsa:3072 -nodes -sha256 -days 3650 -subj "/O=ioqos/CN=ioqos extender CA" \
    -keyout ca.key -out ca.crt 2>/dev/null
  echo "new CA: $out/ca.crt"
fi

san="DNS:$svc,DNS:$svc.$ns,DNS:$svc.$ns.svc,DNS:$svc.$ns.svc.cluster.local"
for ip in $ips; do san="$san,IP:$ip"; done

# issue NAME SUBJECT EXTENSIONS
issue() {
  openssl req -new -newkey rsa:2048 -nodes -sha256 -subj "$2" -keyout "$1.key.new" \
    -out "$1.csr" 2>/dev/null
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -sha256 -days "$days" -in "$1.csr" -CA ca.crt -CAkey ca.key \
    -CAcreateserial -extfile "$1.ext" -out "$1.crt.new" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
  mv "$1.key.new" "$1.key"
  mv "$1.crt.new" "$1.crt"
}
issue server "/O=ioqos/CN=$svc.$ns.svc" \
  "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$san"
issue client "/O=ioqos/CN=ioqos-scheduler" \
  "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"

b64() { base64 < "$1" | tr -d '\n'; }
# secret NAME CERT KEY
secret() {
  cat <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: $1
  namespace: $ns
  labels:
    app.kubernetes.io/part-of: ioqos
type: kubernetes.io/tls
data:
  tls.crt: $(b64 "$2")
  tls.key: $(b64 "$3")
  ca.crt: $(b64 ca.crt)
YAML
}
{
  secret ioqos-scheduler-ext-tls server.crt server.key
  echo "---"
  secret ioqos-scheduler-ext-client client.crt client.key
} > secrets.yaml
echo "wrote $out/{ca,server,client}.{crt,key} and $out/secrets.yaml (kubectl apply -f $out/secrets.yaml)"
