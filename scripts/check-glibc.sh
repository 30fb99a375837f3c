#!/usr/bin/env bash
# check-glibc.sh MAX BINARY...: fails if a binary needs a GLIBC symbol version
# newer than MAX (the Lambda runtime provided.al2023 ships glibc 2.34).
set -euo pipefail
max=$1; shift
[ $# -gt 0 ] || { echo "check-glibc: no binaries given" >&2; exit 2; }
status=0
for bin in "$@"; do
  need=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  if [ -z "$need" ]; then echo "check-glibc: $bin links no glibc symbols"; continue; fi
  newest=$(printf '%s\n%s\n' "$need" "$max" | sort -V | tail -1)
  if [ "$newest" != "$max" ]; then
    echo "check-glibc: $bin needs GLIBC_$need, newer than $max:" >&2
    objdump -T "$bin" | grep -E "GLIBC_($need)" >&2 || true
    status=1
  else
    echo "check-glibc: $bin needs at most GLIBC_$need (limit $max)"
  fi
done
exit $status
