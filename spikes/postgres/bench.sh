#!/usr/bin/env bash
# Interleaved latency runs: wasm guest (plain/TLS) vs the same code native vs the postgres crate vs libpq (pgbench/psql).
set -u
cd /tmp/pgspike
PORT=$(cat port); N=${N:-500}
R=target/release/pgspike-runner
C="addr=127.0.0.1:$PORT user=agmsg password=spikepw dbname=postgres steps=bench n=$N"
export PGPASSWORD=spikepw
echo 'SELECT 1;' > /tmp/pgspike/sel1.sql
printf '\\set v random(1, 1000)\nSELECT :v::int8 + 1;\n' > /tmp/pgspike/selp.sql
for round in 1; do
  echo "=== round $round"
  echo "--- wasm plain";  $R pgspike-notls.wasm --allow 127.0.0.1:$PORT -- $C 2>&1 | grep -E "connect|bench|runner"
  echo "--- wasm tls";    $R pgspike-tls.wasm --dir tls::/ca --allow 127.0.0.1:$PORT -- $C sslmode=verify-full ca=/ca/ca.crt 2>&1 | grep -E "connect|bench|runner"
  echo "--- native same code plain"; target-check/release/pgspike-guest $C 2>&1 | grep -E "connect|bench"
  echo "--- native same code tls"; target-check/release/pgspike-guest $C sslmode=verify-full ca=tls/ca.crt 2>&1 | grep -E "connect|bench"
  echo "--- native postgres crate plain"; target/release/pgspike-native-bench "host=127.0.0.1 port=$PORT user=agmsg password=spikepw dbname=postgres" $N
  echo "--- libpq pgbench SELECT 1 simple";   pgbench -h 127.0.0.1 -p $PORT -U agmsg -n -M simple -f sel1.sql -t $N postgres 2>&1 | grep "latency average"
  echo "--- libpq pgbench SELECT \$1+1 prepared"; pgbench -h 127.0.0.1 -p $PORT -U agmsg -n -M prepared -f selp.sql -t $N postgres 2>&1 | grep "latency average"
  echo "--- psql process: connect + SELECT 1 + exit (x10)"; s=$(date +%s%N); for i in $(seq 10); do psql -h 127.0.0.1 -p $PORT -U agmsg -d postgres -Atqc 'SELECT 1' >/dev/null; done; echo "$(( ($(date +%s%N)-s)/10000000 )) ms/each"
  echo "--- psql process tls verify-full (x10)"; s=$(date +%s%N); for i in $(seq 10); do psql "host=127.0.0.1 port=$PORT user=agmsg dbname=postgres sslmode=verify-full sslrootcert=tls/ca.crt" -Atqc 'SELECT 1' >/dev/null; done; echo "$(( ($(date +%s%N)-s)/10000000 )) ms/each"
done
