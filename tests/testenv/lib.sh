# Sourced by tests/testenv/cluster and tests/testenv/node: what both need of the shell.

# wait_until SECONDS DESCRIPTION COMMAND…: polls COMMAND until it succeeds.
wait_until() {
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { log "timed out after ${limit}s waiting for $what"; return 1; }
    sleep 0.2
  done
}

# issue_cert CA OUT SUBJECT EXTENSIONS: a new key OUT.key and its certificate OUT.crt for SUBJECT,
# signed by CA.crt/CA.key for 2 days, with EXTENSIONS (openssl extfile lines, \n between them).
issue_cert() {
  local ca=$1 out=$2 subject=$3 extensions=$4
  openssl req -newkey rsa:2048 -nodes -subj "$subject" -keyout "$out.key" -out "$out.csr" 2>/dev/null
  printf '%b\n' "$extensions" >"$out.ext"
  openssl x509 -req -in "$out.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 2 \
    -extfile "$out.ext" -out "$out.crt" 2>/dev/null
  chmod 600 "$out.key"
}
