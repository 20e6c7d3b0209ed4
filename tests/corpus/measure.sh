#!/bin/sh
# Measure the intent detector or the output guard on corpus files.
#
#	tests/corpus/measure.sh intent FILE...	(LABEL<TAB>MESSAGE<TAB>JULIA_BEFORE)
#	tests/corpus/measure.sh guard FILE...	(MODE<TAB>LABEL<TAB>REPLY)
#
# Prints per-label precision / recall, the confusion matrix and the
# reliability table (intent), or the catch rate per claim and the false
# alarms per mode (guard), then one "summary" line the tests read. Set
# MODEGATE_BIN for another binary, MEASURE_ERRORS=1 to list every miss
# (never on the blind set: looking at its errors is tuning on it).
set -u
bin=${MODEGATE_BIN:-bin/modegate}
kind=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$kind" = intent ]; then
	cat "$@" | awk -F'\t' 'NF >= 2' > "$tmp/in"
	cut -f2,3 "$tmp/in" | "$bin" intent --context --explain > "$tmp/out" ||
	    exit 1
	cut -f1 "$tmp/in" | paste - "$tmp/out" | awk -F'\t' \
	    -v errors="${MEASURE_ERRORS:-0}" '
	{ n++; gold = $1; got = $2; conf = $3 + 0
	  lab[gold] = 1; lab[got] = 1; cm[gold, got]++; sup[gold]++; pred[got]++
	  if (gold == got) ok++
	  if (got == "OPT_OUT" && gold != "OPT_OUT") fopt++
	  b = conf < 0.5 ? 0 : conf < 0.7 ? 1 : conf < 0.8 ? 2 : conf < 0.9 ? 3 : conf < 0.95 ? 4 : 5
	  bn[b]++; bc[b] += conf; if (gold == got) bok[b]++
	  if (errors == 1 && gold != got)
		printf "# %s -> %s (%.2f, %s): %s\n", gold, got, conf, $5, $4 }
	END {
	  split("INTERESSE_VAGA CONFIRMACAO RECUSA OBJECAO OPT_OUT OPT_IN OBJECAO_GRAVE PEDIDO_HUMANO DESFECHO_FECHOU DESFECHO_NAO_FECHOU SAUDACAO NEUTRO", L, " ")
	  split("VAGA CONF RECU OBJ OUT IN GRAV HUM FECH NFEC SAUD NEUT", S, " ")
	  printf "messages %d, accuracy %.1f%% (%d), false OPT_OUT %d\n\n", n, 100 * ok / n, ok, fopt + 0
	  printf "| intent | support | precision | recall |\n|---|---:|---:|---:|\n"
	  for (i = 1; i <= 12; i++) { l = L[i]
		p = pred[l] ? 100 * cm[l, l] / pred[l] : 0; r = sup[l] ? 100 * cm[l, l] / sup[l] : 0
		printf "| %s | %d | %.1f | %.1f |\n", l, sup[l], p, r
		rec[l] = r }
	  printf "\nconfusion (rows: label, columns: detected)\n\n|      |"
	  for (j = 1; j <= 12; j++) printf " %s |", S[j]
	  printf "\n|---|"; for (j = 1; j <= 12; j++) printf "---:|"; printf "\n"
	  for (i = 1; i <= 12; i++) { printf "| %s |", S[i]
		for (j = 1; j <= 12; j++) printf " %d |", cm[L[i], L[j]]
		printf "\n" }
	  split("<0.50 0.50-0.70 0.70-0.80 0.80-0.90 0.90-0.95 >=0.95", B, " ")
	  printf "\nreliability\n\n| confidence | messages | mean confidence | accuracy |\n|---|---:|---:|---:|\n"
	  for (b = 0; b <= 5; b++) if (bn[b])
		printf "| %s | %d | %.2f | %.1f%% |\n", B[b + 1], bn[b], bc[b] / bn[b], 100 * bok[b] / bn[b]
	  printf "\nsummary accuracy=%.1f opt_out_recall=%.1f false_opt_out=%d objecao_grave_recall=%.1f pedido_humano_recall=%.1f interesse_vaga_recall=%.1f opt_in_recall=%.1f\n", 100 * ok / n, rec["OPT_OUT"], fopt + 0, rec["OBJECAO_GRAVE"], rec["PEDIDO_HUMANO"], rec["INTERESSE_VAGA"], rec["OPT_IN"]
	}'
	exit 0
fi

if [ "$kind" != guard ]; then
	echo "usage: measure.sh intent|guard FILE..." >&2
	exit 64
fi
cat "$@" | awk -F'\t' 'NF == 3' > "$tmp/all"
: > "$tmp/scored"
for m in discovery oferta followup reativacao; do
	awk -F'\t' -v m=$m '$1 == m' "$tmp/all" > "$tmp/in"
	[ -s "$tmp/in" ] || continue
	cut -f3 "$tmp/in" | "$bin" guard --mode $m > "$tmp/out" || exit 1
	paste "$tmp/in" "$tmp/out" >> "$tmp/scored"
done
awk -F'\t' -v errors="${MEASURE_ERRORS:-0}" '
$2 == "OK" { oks++; okm[$1]++; if ($4 != "OK") { fp++; fpm[$1]++
	if (errors == 1) printf "# false alarm (%s, %s): %s\n", $1, $5, $3 } }
$2 != "OK" { v++; vc[$2]++; hit = 0; k = split($5, ids, ",")
	for (i = 1; i <= k; i++) if (ids[i] == $2) hit = 1
	if ($4 != "OK") flagged++
	if (hit) { c++; cc[$2]++ } else if (errors == 1)
		printf "# missed %s (%s, got %s %s): %s\n", $2, $1, $4, $5, $3 }
END {
	printf "replies %d: violations caught %d/%d (%.1f%%), false alarms %d/%d (%.1f%%)\n\n", NR, c, v, 100 * c / v, fp, oks, 100 * fp / oks
	printf "| claim | violations | caught |\n|---|---:|---:|\n"
	n = split("vaga_especifica promessa confirma_reserva negocia_valor dona_da_vaga pressao confirma_pelo_hospital culpa", C, " ")
	for (i = 1; i <= n; i++) if (vc[C[i]])
		printf "| %s | %d | %.1f%% |\n", C[i], vc[C[i]], 100 * cc[C[i]] / vc[C[i]]
	printf "\n| mode | clean replies | false alarms |\n|---|---:|---:|\n"
	split("discovery oferta followup reativacao", M, " ")
	for (i = 1; i <= 4; i++) if (okm[M[i]])
		printf "| %s | %d | %.1f%% |\n", M[i], okm[M[i]], 100 * fpm[M[i]] / okm[M[i]]
	printf "\nsummary recall=%.1f false_alarms=%.1f\n", 100 * c / v, 100 * fp / oks
}' "$tmp/scored"
