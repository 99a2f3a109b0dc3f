#!/usr/bin/env bash
# hack/fuzz.sh OPS SEED SHARDS [RESULT]: the model-based fuzz (test/fuzz) of OPS
# operations from SEED, its episodes split across SHARDS processes, each with its
# own API server (envtest) and the fake browser. The episodes and their seeds
# are the same as one process would run (episode i uses SEED+i and runs in shard
# i mod SHARDS), so a failure prints the same replay command either way.
# Most of an episode is waiting for the roles to converge, not CPU, so shards
# finish the run in a fraction of the time on a small machine.
# Logs go to $FUZZ_LOGS (default: a temporary directory, printed). With RESULT,
# the summary is also written there as Markdown.
set -euo pipefail
ops=${1:?usage: hack/fuzz.sh OPS SEED SHARDS [RESULT]}
seed=${2:?usage: hack/fuzz.sh OPS SEED SHARDS [RESULT]}
shards=${3:?usage: hack/fuzz.sh OPS SEED SHARDS [RESULT]}
result=${4:-}
cd "$(dirname "$0")/.."
logs=${FUZZ_LOGS:-$(mktemp -d -t tabwarden-fuzz.XXXXXX)}
mkdir -p "$logs"
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-$(hack/envtest.sh)}"
go test -c -o "$logs/fuzz.test" ./test/fuzz
echo "fuzz: $ops operations from seed $seed in $shards shards; logs in $logs"
start=$(date +%s)
pids=()
for ((i = 0; i < shards; i++)); do
	(cd test/fuzz && exec "$logs/fuzz.test" -test.run '^TestModelFuzz$' -test.count 1 -test.timeout 0 -test.v \
		-ops "$ops" -seed "$seed" -shards "$shards" -shard "$i" -minimize 20m >"$logs/shard-$i.log" 2>&1) &
	pids+=("$!")
done
failed=0
for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		failed=$((failed + 1))
		echo "shard $i FAILED:"
		grep -A3 -E 'fails:|minimized to|replay the episode' "$logs/shard-$i.log" | head -40 || tail -40 "$logs/shard-$i.log"
	fi
done
secs=$(($(date +%s) - start))
total=0
for ((i = 0; i < shards; i++)); do
	n=$(grep -oE '[0-9]+ operations in all' "$logs/shard-$i.log" | grep -oE '^[0-9]+' || true)
	total=$((total + ${n:-0}))
done
summary="$total operations from seed $seed in $shards shards, $failed failed, ${secs} s ($(awk -v n="$total" -v s="$secs" 'BEGIN { printf "%.1f", (s > 0 ? n / s : 0) }') ops/s)"
echo "fuzz: $summary"
if [[ -n "$result" ]]; then
	{
		echo "# Model fuzz: $(date -u +%Y-%m-%d)"
		echo
		echo "Command: \`make fuzz FUZZ_OPS=$ops FUZZ_SEED=$seed FUZZ_SHARDS=$shards\` (commit $(git rev-parse --short HEAD), $(nproc) cores)."
		echo
		echo "Result: $summary."
		echo
		echo "| shard | operations | episodes | what ran |"
		echo "|---|---|---|---|"
		for ((i = 0; i < shards; i++)); do
			line=$(grep -E 'operations in all' "$logs/shard-$i.log" | sed -E 's/^ *[a-z_]+\.go:[0-9]+: //' || echo "no summary: failed")
			echo "| $i | ${line%% operations*} | $(echo "$line" | grep -oE '\([0-9]+ episodes\)' | tr -d '()') | $(echo "$line" | sed -E 's/.*done: //') |"
		done
	} >"$result"
	echo "fuzz: summary written to $result"
fi
[[ $failed -eq 0 ]]
