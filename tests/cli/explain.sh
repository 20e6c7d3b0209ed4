#!/bin/sh
# modegate explain --json on the seed's DoD messages: keys and values.
set -u
bin=${MODEGATE_BIN:-bin/modegate}
cd "$(dirname "$0")/../.." || exit 1
export MODEGATE_RULES_DIR="$(pwd)"
n=0
# check DESCRIPTION PYTHON-EXPR -- explain ARGS: the expression, over the
# parsed object j, must be true.
check() {
	desc=$1 expr=$2
	shift 3
	n=$((n + 1))
	out=$("$bin" explain --json "$@" 2>&1)
	if printf '%s' "$out" | python3 -c "import json,sys
j = json.loads(sys.stdin.read())
sys.exit(0 if ($expr) else 1)" 2>/dev/null; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		echo "# $out"
	fi
}
echo "1..14"
check "all keys present" "set(j) >= {'intent','confidence','policy','proposal','decision','mode','pending_transition','tools_allowed','tools_removed','forbidden_claims','required_behavior','prompt_constraints'}" \
    -- --mode discovery "Oi, tudo bem?"
check "discovery: interest is PENDING oferta, mode still discovery, no buscar_vagas" \
    "j['intent']=='INTERESSE_VAGA' and j['decision']=='PENDING' and j['proposal']=='oferta' and j['mode']=='discovery' and j['pending_transition']=='oferta' and 'buscar_vagas' in j['tools_removed'] and 'MICRO-CONFIRMAÇÃO' in j['prompt_constraints']" \
    -- --mode discovery "Quero saber de vagas!"
check "pending oferta: a yes confirms, oferta tools, pending cleared" \
    "j['decision']=='CONFIRM' and j['mode']=='oferta' and j['pending_transition'] is None and 'buscar_vagas' in j['tools_allowed'] and j['forbidden_claims']==['dona_da_vaga','negocia_valor','confirma_reserva','promessa']" \
    -- --mode discovery --pending oferta --pending-age 5 "Sim, tenho CRM ativo"
check "pending oferta: a refusal cancels" \
    "j['decision']=='CANCEL' and j['mode']=='discovery' and j['pending_transition'] is None and 'Respeite' in j['prompt_constraints']" \
    -- --mode discovery --pending oferta --pending-age 5 "não, obrigado"
check "a pending of 30 minutes has expired" \
    "j['expired'] is True and j['mode']=='discovery' and j['pending_transition'] is None" \
    -- --mode discovery --pending oferta --pending-age 30 "Sim, tenho CRM ativo"
check "opt-out is blocked by policy, router not run" \
    "j['intent']=='OPT_OUT' and j['policy']=={'decision':'BLOCK','rule':'opt_out_request'} and j['decision'] is None" \
    -- --mode oferta "para de me mandar mensagem"
check "35 days idle goes to reativacao" \
    "j['decision']=='APPLY' and j['mode']=='reativacao' and j['reason']=='inactivity:35d'" \
    -- --mode oferta --inactive-days 35 "oi"
check "the plan: the reply choice and the commit the worker would encode" \
    "j['plan']['reply']=='llm' and j['plan']['mark_read'] and any(a['step']=='router' for a in j['plan']['commit']['audit'])" \
    -- --mode discovery "Quero saber de vagas!"
check "an open objection: interest revisits it, naming it" \
    "j['decision']=='PENDING' and j['reason'].endswith('revisit_objection') and 'valor baixo' in j['plan']['llm_constraints']" \
    -- --mode discovery --objection "valor baixo" "ta bom, me mostra as vagas"
check "opted out: OPT_IN clears it with a canned welcome" \
    "j['policy']['rule']=='opt_in' and j['plan']['canned']=='opt_in_confirmation' and j['plan']['commit']['conversation']['opted_out_at'] is None" \
    -- --mode discovery --opted-out "quero voltar a receber"
check "cooling-off: answered, with the no-offer constraint" \
    "j['plan']['reply']=='llm' and 'NÃO ofereça plantões' in j['plan']['llm_constraints']" \
    -- --mode oferta --cooling-off "oi, tudo bem?"
check "no consent this turn: the bridge is refused, with the reason" \
    "j['plan']['bridge'].startswith('pergunte ao médico')" \
    -- --mode oferta "oi, tudo bem?"

check "the evidence: who decided, the runner-up with its score, the model's features" \
    "j['intent']=='OBJECAO_GRAVE' and j['intent_source'] in ('both','model') and j['runner_up']['intent']!=j['intent'] and 0<=j['runner_up']['score']<=j['confidence'] and '| model: ' in j['evidence'] and j['rule_intent']=='OBJECAO_GRAVE' and j['model_intent']=='OBJECAO_GRAVE'" \
    -- --mode oferta "isso é golpe, vou denunciar vcs no procon"
n=$((n + 1))
out=$(printf 'vou denunciar vcs no procon\tQuer ver as vagas?\n' |
    "$bin" intent --context --explain)
case $out in
OBJECAO_GRAVE*"	vou denunciar vcs no procon	"*"	"*"model: "*) echo "ok $n - intent --explain: source, runner-up, score, evidence" ;;
*) echo "not ok $n - intent --explain: source, runner-up, score, evidence"; echo "# $out" ;;
esac
