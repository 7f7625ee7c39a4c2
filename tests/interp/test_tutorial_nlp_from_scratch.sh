#!/usr/bin/env bash
# The "NLP from scratch" tutorial ports (scripts/tutorials/char_rnn_classification,
# char_rnn_generation, seq2seq_translation) end to end on tiny data written here in the
# tutorial's formats: data/names/[Language].txt (8 names in each of 12 languages, some accented)
# and data/eng-fra.txt (50 English<TAB>French pairs, 46 of which pass the tutorial's filter).
# Checks the printed lines' format and the values known beforehand (one-hot positions, the
# 85/15 split of 96 names, the pair and word counts, the first loss near ln(59)), that the
# losses fall, that the samples and translations are well formed, and the missing-data errors.
# Usage: bash tests/interp/test_tutorial_nlp_from_scratch.sh build/nnrepl
bin=${1:?usage: test_tutorial_nlp_from_scratch.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tut=$root/scripts/tutorials
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

mkdir -p "$tmp/d/data/names" "$tmp/empty"
names() { local f=$tmp/d/data/names/$1.txt; shift; printf '%s\n' "$@" >"$f"; }
names Czech Abl Adsit Ajdrna Alt Antonowitsch Bacon Ballalatak Barina
names Italian Abandonato Abatangelo Abatantuono Abate Abategiovanni Abatescianni Abbà Abbadelli
names Japanese Abe Abukara Adachi Aida Aihara Aizawa Ajibana Akaike
names Polish Adamczak Adamczyk Andrysiak Auttenberg Bartosz Bernard Bobienski Ślusàrski
names Russian Ababko Abaev Abagyan Abaidulin Abaidullin Abaimoff Abaimov Abakeliya
names Greek Adamidis Adamou Agelakos Akrivopoulos Alexandropoulos Anetakis Angelopoulos Antimisiaris
names Korean Ahn Baik Bang Byon Cha Chang Chi Chin
names Chinese Ang AuYong Bai Ban Bao Bei Bian Bui
names German Abbing Abel Abeln Abt Achilles Achterberg Acker Ackermann
names Spanish Abana Abano Abarca Abaroa Abascal Abasolo Abel Abelló
names Irish Adam Ahearn Aodh Aodha Aonghuis Aonghus Bhrighde Bradach
names Scottish Smith Brown Wilson Campbell Stewart Thomson Robertson Anderson
{
  for s in "I am|Je suis" "He is|Il est" "She is|Elle est" "You are|Vous êtes" "We are|Nous sommes" "They are|Ils sont"; do
    for a in "cold|froid" "tired|fatigué" "happy|heureux" "late|en retard" "ready|prêt" "sad|triste" "hungry|affamé"; do
      printf '%s %s.\t%s %s.\n' "${s%|*}" "${a%|*}" "${s#*|}" "${a#*|}"
    done
  done
  printf '%s\n' $'He is not as tall as his father.\tIl n\'est pas aussi grand que son père.' \
    $'I am too tired to drive.\tJe suis trop fatigué pour conduire.' \
    $'I\'m sorry if this is a stupid question.\tJe suis désolé si c\'est une question idiote.' \
    $'I am really proud of you.\tJe suis réellement fière de vous.' \
    $'Go.\tVa !' $'Run!\tCours\u202f!' $'Who?\tQui ?' \
    $'This sentence is long and does not start with a good prefix at all.\tCette phrase est longue.'
} >"$tmp/d/data/eng-fra.txt"

run() { # folder, script, then environment assignments
  local d=$1 s=$2; shift 2
  (cd "$d" && env "$@" "$bin" "$tut/$s/main.lua" 2>"$tmp/err")
}
num() { sed -nE "$2" <<<"$1" | tr '\n' ' '; }

# --- classification
out=$(run "$tmp/d" char_rnn_classification N_EPOCH=10)
rc=$?
check "classification: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "classification: device" has "$out" "Using device = $([ "$(device_of "$bin")" = cuda ] && echo cuda:0 || echo cpu)"
check "classification: accents stripped" has "$out" "converting 'Ślusàrski' to Slusarski"
check "classification: Jones is 5 x 1 x 58" has "$out" "torch.Size([5, 1, 58])"
# 'J' is letter 35 (a-z, then A-Z): row 2 of the printed tensor holds indices 18..35, its last is 1
check "classification: J one-hot at 35" matches "$out" '^         0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 0\., 1\.,$'
check "classification: 96 names" has "$out" "loaded 96 items of data"
check "classification: example line" matches "$out" "^example = \(tensor\(\[0\]$(device_suffix "$bin")\), tensor\(\[\[\[0\., "
check "classification: the example's label and name" has "$out" "'Chinese', 'Ang')"
check "classification: 85/15 split of 96 = 82 + 14" has "$out" "train examples = 82, validation examples = 14"
check "classification: model" has "$out" "  (rnn): RNN(58, 128)"
check "classification: 12 outputs" has "$out" "  (h2o): Linear(in_features=128, out_features=12, bias=True)"
check "classification: label_from_output" matches "$out" "^\('[A-Za-z]+', [0-9]+\)$"
check "classification: training line" has "$out" "training on data set with n = 82"
losses=$(num "$out" 's/^(5|10) \((50|100)%\): \t average batch loss = ([0-9.]+)$/\3/p')
check "classification: two report lines ($losses)" [ "$(wc -w <<<"$losses")" -eq 2 ]
l5=$(cut -d' ' -f1 <<<"$losses") l10=$(cut -d' ' -f2 <<<"$losses")
check "classification: first average below ln 12 = 2.48 ($l5)" less "$l5" 2.49
check "classification: loss falls ($l5 -> $l10)" less "$l10" "$l5"
check "classification: 12 confusion diagonal lines" [ "$(count "$out" '^[A-Z][a-z]+: (0\.[0-9]{2}|1\.00)$')" -eq 12 ]
check "classification: took" matches "$out" '^training took [0-9.e-]+s$'

(cd "$tmp/empty" && "$bin" "$tut/char_rnn_classification/main.lua" >/dev/null 2>"$tmp/err")
check "classification: no data, non-zero exit" [ $? -ne 0 ]
check "classification: no data, message" grep -qF "no data/names/*.txt under the current folder" "$tmp/err"

# --- generation
out=$(run "$tmp/d" char_rnn_generation N_ITERS=1000 PRINT_EVERY=100)
rc=$?
check "generation: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "generation: categories" has "$out" "# categories: 12 ['Chinese', 'Czech', 'German', 'Greek', 'Irish', 'Italian', 'Japanese', 'Korean', 'Polish', 'Russian', 'Scottish', 'Spanish']"
check "generation: O'Neal" has "$out" "O'Neal"
check "generation: 10 progress lines" [ "$(count "$out" '^[0-9]+m [0-9]+s \([0-9]+ [0-9]+%\) [0-9]+\.[0-9]{4}$')" -eq 10 ]
check "generation: 50% line" matches "$out" '^[0-9]+m [0-9]+s \(500 50%\) '
gl=$(num "$out" 's/^[0-9]+m [0-9]+s \([0-9]+ [0-9]+%\) ([0-9.]+)$/\1/p')
first3=$(awk '{ print ($1 + $2 + $3) / 3 }' <<<"$gl") last3=$(awk '{ print ($8 + $9 + $10) / 3 }' <<<"$gl")
check "generation: early losses near ln 59 = 4.08 ($first3)" close "$first3" 4.0 0.4
check "generation: loss falls ($first3 -> $last3)" less "$last3" "$first3"
smp=$(grep -vE '^(#|O.Neal|[0-9]+m )' <<<"$out")
check "generation: 12 samples" [ "$(wc -l <<<"$smp")" -eq 12 ]
check "generation: samples start with R U S G E R S P A C H I" [ "$(cut -c1 <<<"$smp" | tr -d '\n')" = RUSGERSPACHI ]
check "generation: samples are letters, at most 21" [ "$(grep -cE "^[A-Za-z .,;'-]{1,21}$" <<<"$smp")" -eq 12 ]

(cd "$tmp/empty" && "$bin" "$tut/char_rnn_generation/main.lua" >/dev/null 2>"$tmp/err")
check "generation: no data, non-zero exit" [ $? -ne 0 ]
check "generation: no data, message" grep -qF "Data not found. Make sure that you downloaded data" "$tmp/err"

# --- translation
out=$(run "$tmp/d" seq2seq_translation N_EPOCHS=40 PRINT_EVERY=10)
rc=$?
check "seq2seq: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "seq2seq: read twice (prepareData, get_dataloader)" [ "$(count "$out" '^Read 50 sentence pairs$')" -eq 2 ]
check "seq2seq: 46 pairs pass the filter" [ "$(count "$out" '^Trimmed to 46 sentence pairs$')" -eq 2 ]
check "seq2seq: 38 French words + SOS, EOS" has "$out" "fra 40"
check "seq2seq: 34 English words + SOS, EOS" has "$out" "eng 36"
check "seq2seq: a random pair, normalized" matches "$out" "^\['[a-z ]+', '(i am|he is|she is|you are|we are|they are) [a-z ]+'\]$"
sl=$(num "$out" 's/^[0-9]+m [0-9]+s \(- [0-9]+m [0-9]+s\) \([0-9]+ [0-9]+%\) ([0-9.]+)$/\1/p')
check "seq2seq: 4 progress lines ($sl)" [ "$(wc -w <<<"$sl")" -eq 4 ]
check "seq2seq: 100% line" matches "$out" '\) \(40 100%\) [0-9]+\.[0-9]{4}$'
s1=$(cut -d' ' -f1 <<<"$sl") s4=$(cut -d' ' -f4 <<<"$sl")
check "seq2seq: loss falls below half ($s1 -> $s4)" less "$s4" "$(awk -v a="$s1" 'BEGIN { print a / 2 }')"
check "seq2seq: 10 random translations" [ "$(count "$out" '^> [a-z ]+$')" -eq 10 -a "$(count "$out" '^= [a-z ]+$')" -eq 10 ]
check "seq2seq: no accents or capitals left" lacks "$out" "fatigué"
check "seq2seq: outputs are words" [ "$(count "$out" '^< ([A-Za-z]+ ?)+(<EOS>)?$')" -eq 10 ]
check "seq2seq: the four attention sentences" [ "$(count "$out" '^input = ')" -eq 4 -a "$(count "$out" '^output = ')" -eq 4 ]
check "seq2seq: normalized input" has "$out" "input = je suis desole si c est une question idiote"

(cd "$tmp/empty" && "$bin" "$tut/seq2seq_translation/main.lua" >/dev/null 2>"$tmp/err")
check "seq2seq: no data, non-zero exit" [ $? -ne 0 ]
check "seq2seq: no data, message" grep -qF "cannot open data/eng-fra.txt" "$tmp/err"

# on a GPU machine the ports run on the accelerator: the same lines
if [ "$("$bin" -e 'print(torch.cuda.is_available())' 2>/dev/null)" = true ]; then
  out=$(run "$tmp/d" char_rnn_classification N_EPOCH=5)
  rc=$?
  check "cuda classification: exit 0" [ "$rc" -eq 0 ]
  [ "$rc" -eq 0 ] || cat "$tmp/err"
  check "cuda classification: device" matches "$out" "^Using device = cuda"
  check "cuda classification: report line" matches "$out" $'^5 \\(100%\\): \t average batch loss = [0-9.]+$'
  check "cuda classification: 12 diagonal lines" [ "$(count "$out" '^[A-Z][a-z]+: (0\.[0-9]{2}|1\.00)$')" -eq 12 ]
  out=$(run "$tmp/d" seq2seq_translation N_EPOCHS=20 PRINT_EVERY=10)
  rc=$?
  check "cuda seq2seq: exit 0" [ "$rc" -eq 0 ]
  [ "$rc" -eq 0 ] || cat "$tmp/err"
  sl=$(num "$out" 's/^[0-9]+m [0-9]+s \(- [0-9]+m [0-9]+s\) \([0-9]+ [0-9]+%\) ([0-9.]+)$/\1/p')
  check "cuda seq2seq: loss falls ($sl)" less "$(cut -d' ' -f2 <<<"$sl")" "$(cut -d' ' -f1 <<<"$sl")"
  check "cuda seq2seq: translations" [ "$(count "$out" '^< ')" -eq 10 -a "$(count "$out" '^output = ')" -eq 4 ]
else
  echo "skipped: the CUDA runs (no GPU)"
fi

finish
