#!/bin/bash
# testdata/longrun/run.sh OUT [NAME...]: the long run of issue 18 at the
# current commit, one process per function of the corpus, JOBS (default 2)
# at a time, expensive ones first. Each piece writes OUT/out-NAME.txt (its
# counts; PASS on its last line when it had no failure) and
# OUT/report-NAME.txt (its failures, shrunk); a piece whose out file
# already ends in PASS is skipped, so a run stopped part-way resumes. Copy
# the PASS files here, with the commit (OUT/COMMIT) in the README, and
# ./total.sh adds them up.
set -u
out=$(realpath -m "${1:?usage: run.sh OUT [NAME...]}")
shift
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"
git rev-parse --short HEAD > "$out/COMMIT"
go test -c -o "$out/schedule.test" ./schedule || exit 1
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	names=(skewed_sym chain_sym upper_inplace maxpool_0 skewed_reduce depthwise_silu_0 conv2d
		conv_grouped_strided_0 conv1d_dilated_0 transpose_chain softmax_layernorm_0 colsum_max_0
		accumulate triangular_matvec skewed matmul_sym chain reduce_elementwise multi_consumer
		stencil_sym matmul matmul_bias_relu predicate_tri diamond layernorm softmax inplace_mirror
		fuse_compute_at rmsnorm partial_consumer)
fi
jobs=${JOBS:-2}
# Each piece's heap: GOGC=400 lets it grow to five times what is live,
# and two pieces at 12 GB each were killed for memory at 3f59e53 on a
# 24 GB machine; the limit makes the collector work harder instead.
memlimit=${GOMEMLIMIT:-$(awk -v j="$jobs" '/^MemTotal:/ { printf "%dMiB", $2 / 1024 / (j + 1) }' /proc/meminfo)}
cd schedule || exit 1
for c in "${names[@]}"; do
	if tail -n 1 "$out/out-$c.txt" 2>/dev/null | grep -q "^PASS"; then continue; fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 10; done
	GOGC=400 GOMEMLIMIT=$memlimit "$out/schedule.test" -test.run "AdversarialSchedules/corpus/^$c\$" -long -test.timeout 6h \
		-report "$out/report-$c.txt" > "$out/out-$c.txt" 2>&1 &
done
wait
grep -L "^PASS" "$out"/out-*.txt 2>/dev/null | sed 's/^/not passed: /'
