#!/bin/bash
# tools/trainmodel/gen.sh: the tuning runs whose records (with their
# features) the shipped cost model is fitted on: built-in workloads and
# fusion goldens at small sizes, one thread, into $DB (bin/train.jsonl),
# the log in bin/train.log. testdata/model/train.jsonl.gz holds the records
# autotune/default_model.json was fitted on:
#   go run ./tools/trainmodel -o autotune/default_model.json testdata/model/train.jsonl.gz
set -e
cd "$(dirname "$0")/../.."
db=${DB:-bin/train.jsonl}
L=bin/loom
mkdir -p bin && go build -o bin/loom ./tools/loom
for w in "gemm -size 256" "gemm -size 512" "gemm_bias_relu -size 384" "rmsnorm -size R=2048,D=768" "softmax -size R=1024,D=1024" "chain -size S1=16,S2=64" "conv2d -size C=32,H=28,W=28,K=32"; do
  $L tune -workload $w -trials 48 -threads 1 -confirm 0 -db $db -q >> bin/train.log 2>&1
  echo "done $w" >> bin/train.log
done
for g in mlp.json:T=256 layernorm.txtar:B=64,T=64 pooling.txtar:N=64 depthwise_bn_silu.txtar:N=64 matmul_bias_relu.txtar:M=512 injective.txtar:A=64,B=64 two_reductions.txtar:R=4096; do
  f=${g%%:*}; s=${g#*:}
  src=testdata/fusion/$f
  if [[ $f == *.txtar ]]; then awk '/^-- graph.json --$/{p=1;next} /^-- /{p=0} p' $src > bin/$f.json; src=bin/$f.json; fi
  args=(); [ -n "$s" ] && args=(-size $s)
  $L tune -graph $src "${args[@]}" -trials 32 -threads 1 -confirm 0 -db $db -q >> bin/train.log 2>&1
  echo "done $g" >> bin/train.log
done
echo ALLDONE >> bin/train.log
