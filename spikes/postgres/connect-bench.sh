#!/usr/bin/env bash
# Connect cost, 10 fresh processes each: guest-measured connect phases and the whole process wall time.
cd /tmp/pgspike; PORT=$(cat port); R=target/release/pgspike-runner
C="addr=127.0.0.1:$PORT user=agmsg password=spikepw dbname=postgres steps=connect"
run() { local label=$1; shift; local ts=(); local cs=()
  for i in $(seq 10); do s=$(date +%s%N); out=$("$@" 2>&1); e=$(( ($(date +%s%N)-s)/1000 )); ts+=($e)
    cs+=($(echo "$out" | sed -n 's/^connect: \([0-9.]*\)\(ms\|µs\).*/\1/p')); done
  printf '%-34s connect ms: %s | process wall us sorted: %s\n' "$label" "$(printf '%s\n' "${cs[@]}" | sort -n | tr '\n' ' ')" "$(printf '%s\n' "${ts[@]}" | sort -n | head -5 | tr '\n' ' ')"; }
run "wasm plain scram"       $R pgspike-notls.wasm --allow 127.0.0.1:$PORT -- $C
run "wasm tls verify-full"   $R pgspike-tls.wasm --dir tls::/ca --allow 127.0.0.1:$PORT -- $C sslmode=verify-full ca=/ca/ca.crt
run "native plain scram"     target-check/release/pgspike-guest $C
run "native tls verify-full" target-check/release/pgspike-guest $C sslmode=verify-full ca=tls/ca.crt
