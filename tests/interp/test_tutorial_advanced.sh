#!/usr/bin/env bash
# The chatbot and neural style tutorial ports (scripts/tutorials/chatbot_tutorial,
# neural_style_tutorial) end to end on tiny data written here in the tutorials' formats: a
# Cornell-style corpus (movie_lines.txt / movie_conversations.txt, ISO-8859-1, " +++$+++ "
# fields: 8 copies of 6 exchanges, one accented pair of rare words, one over-long line) and two
# small JPEGs. Checks the printed lines against the counts known beforehand (50 pairs read, 49
# short enough, 28 words, 20 of 25 kept, 48 pairs left), the bytes and CSV forms, the batch
# tensors, that the loss starts near ln(23) and falls, the checkpoint and its resumption, the chat
# loop fed on stdin, the style transfer's lines and images, and the missing-data errors.
# Usage: bash tests/interp/test_tutorial_advanced.sh build/nnrepl
bin=${1:?usage: test_tutorial_advanced.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tut=$root/scripts/tutorials
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

corpus="$tmp/c/data/cornell movie-dialogs corpus"
mkdir -p "$corpus" "$tmp/s/data/images/neural-style" "$tmp/empty"
{
  printf 'L1 +++$+++ u0 +++$+++ m0 +++$+++ ZOE +++$+++ Caf\xe9 "cr\xe8me" for you?\n'
  printf 'L2 +++$+++ u1 +++$+++ m0 +++$+++ BOB +++$+++ Non, merci.\n'
  printf "L3 +++\$+++ u0 +++\$+++ m0 +++\$+++ ZOE +++\$+++ It's too long a sentence for this little bot to learn.\n"
  printf 'L4 +++$+++ u1 +++$+++ m0 +++$+++ BOB +++$+++ Hello.\n'
} >"$corpus/movie_lines.txt"
printf "%s\n" "u0 +++\$+++ u1 +++\$+++ m0 +++\$+++ ['L1', 'L2']" "u0 +++\$+++ u1 +++\$+++ m0 +++\$+++ ['L3', 'L4']" \
  >"$corpus/movie_conversations.txt"
n=4
for m in 1 2 3 4 5 6 7 8; do
  for qa in "Hello.|Hello." "How are you?|I m fine." "Where are you from?|San Francisco." "Who are you?|I m a lawyer." \
    "Are you my friend?|No." "Goodbye.|Goodbye."; do
    printf 'L%d +++$+++ u%d +++$+++ m%d +++$+++ BOB +++$+++ %s\n' $((n + 1)) "$m" "$m" "${qa%|*}" $((n + 2)) "$m" "$m" "${qa#*|}"
    printf "u%d +++\$+++ u%d +++\$+++ m%d +++\$+++ ['L%d', 'L%d']\n" "$m" "$m" "$m" $((n + 1)) $((n + 2)) >>"$corpus/movie_conversations.txt"
    n=$((n + 2))
  done
done >>"$corpus/movie_lines.txt"

chatbot() { # stdin for --chat, then environment assignments
  (cd "$tmp/c" && env HIDDEN_SIZE=16 BATCH_SIZE=8 "$@" "$bin" "$tut/chatbot_tutorial/main.lua" --chat 2>"$tmp/err")
}

# --- chatbot
out=$(printf 'Hello.\nwho are you?\nxyzzy is here\nq\nhello\n' | chatbot N_ITERATION=60 PRINT_EVERY=20 SAVE_EVERY=30)
rc=$?
check "chatbot: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "chatbot: bytes line, Latin-1 escaped" has "$out" "b'L1 +++\$+++ u0 +++\$+++ m0 +++\$+++ ZOE +++\$+++ Caf\\xe9 \"cr\\xe8me\" for you?\\n'"
check "chatbot: bytes line with a quote" has "$out" "b\"L3 +++\$+++ u0 +++\$+++ m0 +++\$+++ ZOE +++\$+++ It's too long"
check "chatbot: 10 lines of each file" [ "$(count "$out" "^b['\"]")" -eq 20 ]
check "chatbot: the steps" has "$out" $'\nProcessing corpus...\n\nLoading conversations...\n\nWriting newly formatted file...\n\nSample lines from file:'
check "chatbot: sample pair, CSV-quoted" has "$out" "b'\"Caf\\xc3\\xa9 \"\"cr\\xc3\\xa8me\"\" for you?\"\\tNon, merci.\\n'"
check "chatbot: formatted file, UTF-8" [ "$(head -c 26 "$corpus/formatted_movie_lines.txt" | od -An -tx1 | tr -d ' \n')" = "22436166c3a92022226372c3a86d65222220666f7220796f753f" ]
check "chatbot: 50 lines" [ "$(wc -l <"$corpus/formatted_movie_lines.txt")" -eq 50 ]
check "chatbot: read 50" has "$out" "Read 50 sentence pairs"
check "chatbot: 49 under MAX_LENGTH" has "$out" "Trimmed to 49 sentence pairs"
check "chatbot: 28 words" has "$out" "Counted words: 28"
check "chatbot: accents stripped, punctuation split" has "$out" $'\npairs:\n[\'cafe creme for you ?\', \'non merci .\']\n[\'hello .\', \'hello .\']'
check "chatbot: keep_words" has "$out" "keep_words 20 / 25 = 0.8000"
check "chatbot: pairs trimmed" has "$out" "Trimmed from 49 pairs to 48, 0.9796 of total"
check "chatbot: input_variable" matches "$out" '^input_variable: tensor\(\[\[[0-9 ,]+\],$'
check "chatbot: lengths, longest first" matches "$out" '^lengths: tensor\(\[[3-6], [3-6], [3-6], [3-6], [3-6]\]\)$'
l=$(sed -nE 's/^lengths: tensor\(\[(.*)\]\)$/\1/p' <<<"$out" | tr -d ' ')
check "chatbot: lengths descending ($l)" [ "$(tr ',' '\n' <<<"$l")" = "$(tr ',' '\n' <<<"$l" | sort -rn)" ]
# the first step of every target is a word; the batch is random (unseeded, as in the tutorial), and
# when all its targets have one length no False widens the column (" True" then prints "True")
check "chatbot: mask" matches "$out" '^mask: tensor\(\[\[ ?True, {1,2}True, {1,2}True, {1,2}True, {1,2}True\],$'
check "chatbot: max_target_len" matches "$out" '^max_target_len: [3-6]$'
check "chatbot: building lines" has "$out" $'Building encoder and decoder ...\nModels built and ready to go!\nBuilding optimizers ...\nStarting Training!\nInitializing ...\nTraining...'
losses=$(sed -nE 's/^Iteration: (20|40|60); Percent complete: (33\.3|66\.7|100\.0)%; Average loss: ([0-9.]+)$/\3/p' <<<"$out" | tr '\n' ' ')
check "chatbot: three loss lines ($losses)" [ "$(wc -w <<<"$losses")" -eq 3 ]
first=$(cut -d' ' -f1 <<<"$losses") last=$(cut -d' ' -f3 <<<"$losses")
check "chatbot: first loss near ln 23 = 3.135 ($first)" close "$first" 3.135 0.15
check "chatbot: loss falls ($first -> $last)" less "$last" "$first"
check "chatbot: two bot answers" [ "$(count "$out" '^> Bot: ([a-z.!?]+( |$))*$')" -eq 2 ]
check "chatbot: unknown word" has "$out" "> Error: Encountered unknown word."
check "chatbot: q stops the chat" [ "$(count "$out" '^> ')" -eq 4 ]
ck="$tmp/c/data/save/cb_model/cornell movie-dialogs corpus/2-2_16"
check "chatbot: checkpoints at 30 and 60" [ -f "$ck/30_checkpoint.tar" -a -f "$ck/60_checkpoint.tar" ]
back=$(cd "$ck" && "$bin" -e 'local c = torch.load("60_checkpoint.tar")
io.write(c.iteration, " ", c.voc_dict.num_words, " ", c.voc_dict.index2word[3], " ", tostring(c.en["embedding.weight"].shape), " ", #c.de_opt.param_groups[1].params, " ", c.de_opt.param_groups[1].lr)' 2>&1)
check "chatbot: checkpoint loads back ($back)" [ "$back" = "60 23 you torch.Size([23, 16]) 13 0.0005" ]
out=$(printf 'goodbye\n' | chatbot N_ITERATION=62 PRINT_EVERY=1 SAVE_EVERY=100 LOAD_FILENAME="$ck/60_checkpoint.tar")
check "chatbot: resumed from 60" [ "$(count "$out" '^Iteration: ')" -eq 2 ]
check "chatbot: resumed lines" matches "$out" '^Iteration: 61; Percent complete: 98\.4%; Average loss: [0-9.]+$'
check "chatbot: chat ends at end of input" [ "$(count "$out" '^> Bot: ')" -eq 1 ]

(cd "$tmp/empty" && "$bin" "$tut/chatbot_tutorial/main.lua" >/dev/null 2>"$tmp/err")
check "chatbot: no data, non-zero exit" [ $? -ne 0 ]
check "chatbot: no data, message" grep -qF "cannot open data/cornell movie-dialogs corpus/movie_lines.txt" "$tmp/err"

# --- neural style
(cd "$tmp/s/data/images/neural-style" && "$bin" -e 'local T = require("torchvision").transforms
torch.manual_seed(1)
T.ToPILImage()(torch.rand(3, 40, 56)):save("picasso.jpg")
T.ToPILImage()(torch.linspace(0, 1, 40):view(1, 40, 1):expand(3, 40, 56):contiguous()):save("dancing.jpg")')
out=$(cd "$tmp/s" && IMSIZE=32 NUM_STEPS=45 "$bin" "$tut/neural_style_tutorial/main.lua" --random-weights 2>"$tmp/err")
rc=$?
check "style: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "style: images shown" has "$out" $'Style Image written to style_image.png\nContent Image written to content_image.png\nInput Image written to input_image.png\nBuilding the style transfer model..\nOptimizing..'
check "style: run line" has "$out" $'run [50]:\nStyle Loss : '
check "style: loss line" matches "$out" '^Style Loss : [0-9]+\.[0-9]{6} Content Loss: [0-9]+\.[0-9]{6}$'
c50=$(sed -nE 's/^Style Loss : .* Content Loss: ([0-9.]+)$/\1/p' <<<"$out")
check "style: the input left the content image ($c50)" less 0 "$c50"
check "style: output written" has "$out" "Output Image written to output_image.png"
sizes=$(cd "$tmp/s" && "$bin" -e 'local Image = require("PIL").Image
local T = require("torchvision").transforms
for _, f in ipairs({"style_image", "content_image", "input_image", "output_image"}) do
  local t = T.ToTensor()(Image.open(f .. ".png")); io.write(tostring(t.shape), " ") end
local a, b = T.ToTensor()(Image.open("content_image.png")), T.ToTensor()(Image.open("output_image.png"))
io.write(string.format("%s", (a - b):abs():max():item() > 0.02))' 2>&1)
check "style: images 3x32x44, Resize(32) of 40x56; the output differs ($sizes)" [ "$sizes" = "torch.Size([3, 32, 44]) torch.Size([3, 32, 44]) torch.Size([3, 32, 44]) torch.Size([3, 32, 44]) true" ]
(cd "$tmp/s" && HOME=$tmp/empty TORCH_HOME=$tmp/empty/hub IMSIZE=32 "$bin" "$tut/neural_style_tutorial/main.lua" >/dev/null 2>"$tmp/err")
check "style: no VGG19 checkpoint, non-zero exit" [ $? -ne 0 ]
check "style: no checkpoint, message" grep -qF "vgg19-dcbb9e9d.pth is not in the cache" "$tmp/err"
(cd "$tmp/empty" && "$bin" "$tut/neural_style_tutorial/main.lua" --random-weights >/dev/null 2>"$tmp/err")
check "style: no images, non-zero exit" [ $? -ne 0 ]
check "style: no images, message" grep -qF "cannot open './data/images/neural-style/picasso.jpg'" "$tmp/err"

finish
