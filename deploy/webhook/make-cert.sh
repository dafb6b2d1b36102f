#!/usr/bin/env bash
# Makes the webhook's serving certificate with openssl, for clusters without cert-manager
# (cert-manager.yaml is the default path): a private CA (ca.crt, ca.key) and a certificate for
# the Service's DNS names (tls.crt, tls.key) in OUT_DIR. With --fill FILE it also makes FILE, a
# copy of webhook.yaml, use that CA: caBundle written, the cert-manager.io/inject-ca-from
# annotation dropped.
#
#   cp deploy/webhook/webhook.yaml DIR/webhook.yaml
#   deploy/webhook/make-cert.sh --fill DIR/webhook.yaml OUT_DIR [SERVICE [NAMESPACE]]
#   kubectl -n nodegate create secret tls nodegate-webhook-tls \
#     --cert=OUT_DIR/tls.crt --key=OUT_DIR/tls.key
#
# The API server checks the name SERVICE.NAMESPACE.svc (defaults: nodegate-webhook, nodegate).
# EXTRA_SANS (e.g. "IP:127.0.0.1,DNS:localhost") adds names, for tests. An existing CA in
# OUT_DIR is kept, so running it again rotates only the serving certificate (CA_DAYS, DAYS) and
# caBundle stays as it is.
set -euo pipefail

fill=""
if [ "${1:-}" = "--fill" ]; then
  fill="$2"
  shift 2
fi
out="${1:?usage: make-cert.sh [--fill FILE] OUT_DIR [SERVICE [NAMESPACE]]}"
service="${2:-nodegate-webhook}"
namespace="${3:-nodegate}"
days="${DAYS:-365}"
ca_days="${CA_DAYS:-3650}"

mkdir -p "$out"
umask 077
if [ ! -s "$out/ca.crt" ] || [ ! -s "$out/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$out/ca.key" -out "$out/ca.crt" -days "$ca_days" \
    -subj "/CN=nodegate-webhook-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
fi
sans="DNS:$service,DNS:$service.$namespace,DNS:$service.$namespace.svc"
sans="$sans,DNS:$service.$namespace.svc.cluster.local"
if [ -n "${EXTRA_SANS:-}" ]; then
  sans="$sans,$EXTRA_SANS"
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$tmp/tls.key" -out "$tmp/tls.csr" -subj "/CN=$service.$namespace.svc" 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n' \
  "$sans" >"$tmp/ext"
openssl x509 -req -in "$tmp/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
  -CAcreateserial -CAserial "$tmp/ca.srl" -days "$days" -extfile "$tmp/ext" \
  -out "$tmp/tls.crt" 2>/dev/null
# Key first, then the certificate, each renamed into place: a reader that sees the new
# certificate also finds its key (the webhook reloads only a pair that matches).
mv "$tmp/tls.key" "$out/tls.key"
mv "$tmp/tls.crt" "$out/tls.crt"
chmod 0644 "$out/ca.crt" "$out/tls.crt"

bundle="$(base64 -w0 <"$out/ca.crt")"
if [ -n "$fill" ]; then
  # caBundle goes right under clientConfig (an earlier one is replaced); without the
  # annotation cert-manager's CA injector, if installed, leaves the configuration alone.
  awk -v bundle="$bundle" '
    /cert-manager\.io\/inject-ca-from/ { next }
    /^[[:space:]]*caBundle:/ { next }
    { print }
    /^[[:space:]]*clientConfig:[[:space:]]*$/ {
      match($0, /^[[:space:]]*/)
      printf "%s  caBundle: %s\n", substr($0, 1, RLENGTH), bundle
    }' "$fill" >"$fill.tmp"
  grep -q "caBundle: $bundle" "$fill.tmp" || { rm -f "$fill.tmp"; echo "make-cert: no clientConfig: in $fill" >&2; exit 1; }
  cat "$fill.tmp" >"$fill"  # (not mv: FILE keeps its mode)
  rm -f "$fill.tmp"
  echo "make-cert: caBundle filled in $fill" >&2
fi
echo "make-cert: $out/tls.crt for $service.$namespace.svc, signed by $out/ca.crt" >&2
