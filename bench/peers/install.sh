#!/usr/bin/env bash
# Installs the peer benchmark's npm dependencies (graphile-worker, pg-boss, pg)
# into bench/peers/node_modules. Idempotent and quiet: skips the install when
# node_modules already matches package-lock.json and the running Node version.
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.peers-install-stamp
want="$(node --version) $( (cat package.json package-lock.json 2>/dev/null) | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

# graphile-worker 0.18 and pg-boss 12 declare engines node >= 22; they run on
# Node 20 for these workloads, so do not let an engine-strict npmrc refuse them.
flags=(--no-audit --no-fund --loglevel=error --engine-strict=false)
if [ -f package-lock.json ]; then
  npm ci "${flags[@]}" >/dev/null
else
  npm install "${flags[@]}" >/dev/null
fi
echo "$want" > "$stamp"
