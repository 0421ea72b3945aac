#!/bin/bash
# The fast-spell A/B (2026-11-29, before percall/run.sh; output: fast_ab.txt):
# /tmp/m/micro and /tmp/m/pp are /tmp/micro and /tmp/pingpong of run.sh;
# the libraries /tmp/lib_base and /tmp/lib_new likewise.
source /work/main/ci/mpi_env.sh
rounds=${ROUNDS:-4}
for r in $(seq $rounds); do
  for np in 2 4; do
    for b in 1024 256; do
      [ $np = 2 ] && [ $b = 256 ] && continue
      for v in base:300 base:0 new:300; do
        lib=${v%%:*}; to=${v##*:}
        iters=$([ $np = 2 ] && echo 200000 || echo 40000)
        spell=$(/tmp/m/pp | sed -n 's/.*transfer \([0-9]*\) ns.*/\1/p')
        out=$(mpirun --allow-run-as-root --oversubscribe -np $np -x LD_LIBRARY_PATH=/tmp/lib_$lib -x OC_TIMEOUT_S=$to /tmp/m/micro $b $iters | tail -1)
        echo "round=$r np=$np b=$b lib=$lib timeout=$to spell=$spell $out"
      done
    done
  done
done
