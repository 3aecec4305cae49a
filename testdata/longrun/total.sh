#!/bin/sh
# total.sh [DIR]: adds up the pieces of the long run in DIR (default this
# directory): the accepted and tried steps, the failures, and the counts
# by primitive and by refusal reason (the 20 most common).
cd "$(dirname "$0")" || exit 1
[ $# -gt 0 ] && { cd "$1" || exit 1; }
awk '
FNR == 1 { section = "" }
/^done: / { pieces++; acc += $3; tried += $6 }
/^failures: / { fail += $2 }
/^sequences [0-9]+, ops tried/ { seqs += $2; compiled += $NF }
/^sequences ended by a step too costly to interpret: / { costly += $NF }
/^accepted by primitive:/ { section = "acc"; next }
/^refused by primitive and sentinel:/ { section = "ref"; next }
/^refused by reason:/ { section = "why"; next }
/^[a-z]/ { section = "" }
section != "" && /^ +[0-9]+  / {
	n = $1; sub(/^ +[0-9]+  /, ""); count[section, $0] += n; keys[section, $0] = 1
}
END {
	printf "%d pieces: %d accepted of %d tried, %d failures\n", pieces, acc, tried, fail
	printf "%d sequences, %d ended by a step too costly to interpret; %d schedules compiled and compared\n", seqs, costly, compiled
	split("acc ref why", order, " ")
	title["acc"] = "accepted by primitive"; title["ref"] = "refused by primitive and sentinel"; title["why"] = "refused by reason"
	for (i = 1; i <= 3; i++) {
		s = order[i]; print title[s] ":"
		cmd = "sort -rn | head -n 20"
		for (k in keys) { split(k, p, SUBSEP); if (p[1] == s) printf "%10d  %s\n", count[k], p[2] | cmd }
		close(cmd)
	}
}' out-*.txt
