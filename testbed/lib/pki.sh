# The cluster's TLS: one CA, a serving cert for the apiserver, client certs for each component. openssl only.
make_cert() { # NAME SUBJECT [SAN]
  local name=$1 subj=$2 san=${3:-} ext
  [ -f "$TB_PKI/$name.crt" ] && return 0
  openssl genrsa -out "$TB_PKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$TB_PKI/$name.key" -subj "$subj" -out "$TB_PKI/$name.csr" 2>/dev/null
  ext="$TB_PKI/$name.ext"
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"
    else echo "extendedKeyUsage=clientAuth"; fi; } > "$ext"
  openssl x509 -req -in "$TB_PKI/$name.csr" -CA "$TB_PKI/ca.crt" -CAkey "$TB_PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$ext" -out "$TB_PKI/$name.crt" 2>/dev/null
  rm -f "$TB_PKI/$name.csr" "$ext"
}

make_pki() {
  mkdir -p "$TB_PKI"; chmod 700 "$TB_PKI"
  if [ ! -f "$TB_PKI/ca.crt" ]; then
    openssl genrsa -out "$TB_PKI/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "$TB_PKI/ca.key" -subj "/CN=node-maint-testbed-ca" -days 3650 -sha256 \
      -out "$TB_PKI/ca.crt" 2>/dev/null
  fi
  make_cert apiserver "/CN=kube-apiserver" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:10.96.0.1"
  make_cert admin "/O=system:masters/CN=testbed-admin"
  make_cert controller-manager "/CN=system:kube-controller-manager"
  make_cert scheduler "/CN=system:kube-scheduler"
  make_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  make_cert kwok "/O=system:masters/CN=testbed-kwok"
  [ -f "$TB_PKI/sa.key" ] || { openssl genrsa -out "$TB_PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$TB_PKI/sa.key" -pubout -out "$TB_PKI/sa.pub" 2>/dev/null; }
}

# write_kubeconfig FILE CERT_NAME [SERVER]: a kubeconfig with embedded credentials.
write_kubeconfig() {
  local file=$1 cert=$2 server=${3:-$APISERVER_URL}
  write_atomically "$file" 600 <<KC
apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 "$TB_PKI/ca.crt")
users:
- name: $cert
  user:
    client-certificate-data: $(base64 -w0 "$TB_PKI/$cert.crt")
    client-key-data: $(base64 -w0 "$TB_PKI/$cert.key")
contexts:
- name: testbed
  context: {cluster: testbed, user: $cert}
current-context: testbed
KC
}
