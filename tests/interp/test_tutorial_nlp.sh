#!/usr/bin/env bash
# scripts/tutorials/nn_tutorial.lua and scripts/tutorials/nlp/*.lua end to end on short runs: exit
# status, the printed lines' format and the values that can be known (the autograd example's
# gradient, softmax summing to 1, the taggers learning their training sentence), losses falling,
# and the error for missing data.
# Usage: bash tests/interp/test_tutorial_nlp.sh build/nnrepl
bin=${1:?usage: test_tutorial_nlp.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

out=$("$bin" "$dir/nlp/pytorch_tutorial.lua" 2>&1)
check "pytorch_tutorial: exit 0" [ $? -eq 0 ]
check "pytorch_tutorial: V" has "$out" "tensor([1., 2., 3.])"
check "pytorch_tutorial: z = x + y" has "$out" "tensor([5., 7., 9.], grad_fn=<AddBackward0>)"
check "pytorch_tutorial: s = 21" has "$out" "tensor(21., grad_fn=<SumBackward0>)"
check "pytorch_tutorial: ds/dx = 1" has "$out" "tensor([1., 1., 1.])"
check "pytorch_tutorial: view 2x12" [ "$(count "$out" '^tensor\(\[\[.*(,)$')" -ge 2 ]
check "pytorch_tutorial: no_grad" [ "$(tail -3 <<<"$out" | tr '\n' ' ')" = "true true false " ]

out=$("$bin" "$dir/nlp/deep_learning_tutorial.lua" 2>&1)
check "deep_learning: exit 0" [ $? -eq 0 ]
check "deep_learning: softmax sums to 1" has "$out" "tensor(1.)"
check "deep_learning: vocabulary" matches "$out" "^\{'me': 0, 'gusta': 1, .*'on': 25\}$"
# after training: test sentence 1 Spanish (label 0 larger), sentence 2 English
last=$(grep -E '^tensor\(\[\[' <<<"$out" | tail -2)
s1=$(sed -nE '1s/^tensor\(\[\[ *(-?[0-9.]+), *(-?[0-9.]+)\]\]\)$/\1 \2/p' <<<"$last")
s2=$(sed -nE '2s/^tensor\(\[\[ *(-?[0-9.]+), *(-?[0-9.]+)\]\]\)$/\1 \2/p' <<<"$last")
check "deep_learning: 'Yo creo que si' Spanish ($s1)" less "${s1#* }" "${s1% *}"
check "deep_learning: 'it is lost on me' English ($s2)" less "${s2% *}" "${s2#* }"

out=$("$bin" "$dir/nlp/word_embeddings_tutorial.lua" --epochs 4 2>&1)
check "word_embeddings: exit 0" [ $? -eq 0 ]
check "word_embeddings: trigrams" has "$out" "[(['When', 'forty'], 'winters'), (['forty', 'winters'], 'shall'), (['winters', 'shall'], 'besiege')]"
losses=$(grep -E '^\[[0-9]' <<<"$out" | tr -d '[],')
check "word_embeddings: 4 losses" [ "$(wc -w <<<"$losses")" -eq 4 ]
read -r l1 l2 l3 l4 <<<"$losses"
# 113 trigrams, 97 words: the first epoch's total near 113 ln 97 = 517
check "word_embeddings: first total near 113 ln 97 ($l1)" close "$l1" 517 15
check "word_embeddings: losses fall ($losses)" awk_true "$l2 < $l1 && $l3 < $l2 && $l4 < $l3"
check "word_embeddings: CBOW data" has "$out" "[(['We', 'are', 'to', 'study'], 'about'),"

out=$("$bin" "$dir/nlp/sequence_models_tutorial.lua" 2>&1)
check "sequence_models: exit 0" [ $? -eq 0 ]
check "sequence_models: hidden tuple" matches "$out" '^\(tensor\(\[\[\[.*\]\]\], grad_fn=<.*>\), tensor\(\[\[\[.*\]\]\], grad_fn=<.*>\)\)$'
last=$(tail -5 <<<"$out" | tr -d '[]()tensor' | awk -F, '{ m = 1; for (i = 2; i <= 3; i++) if ($i + 0 > $m + 0) m = i; printf "%d ", m - 1 }')
check "sequence_models: learns DET NN V DET NN ($last)" [ "$last" = "0 1 2 0 1 " ]

out=$("$bin" "$dir/nlp/advanced_tutorial.lua" 2>&1)
check "advanced: exit 0" [ $? -eq 0 ]
check "advanced: two predictions" [ "$(count "$out" '^\(tensor\(-?[0-9.]+\), \[[0-4](, [0-4]){10}\]\)$')" -eq 2 ]
check "advanced: learns B I I I O O O B I O O" matches "$(tail -1 <<<"$out")" ', \[0, 1, 1, 1, 2, 2, 2, 0, 1, 2, 2\]\)$'

# Debian's Fashion-MNIST where installed (CI), else a tiny set in its layout (the GPU machine)
fm=${NNREPL_TEST_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
if [ ! -s $fm/train-images-idx3-ubyte.gz ]; then
  fm=$tmp/fm
  "$bin" "$root/tests/interp/make_tiny_mnist.lua" "$fm" 800 10 >/dev/null && mv "$fm/MNIST" "$fm/FashionMNIST"
fi
out=$("$bin" "$dir/nn_tutorial.lua" --data-root "$fm" --limit 640 --epochs 2 2>&1)
rc=$?
check "nn_tutorial: exit 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || tail -5 <<<"$out"
check "nn_tutorial: shape" has "$out" "torch.Size([640, 784])"
check "nn_tutorial: labels 0..9" has "$out" $'tensor(0)\ttensor(9)'
first=$(grep -m1 -E '^tensor\([0-9.]+, grad_fn=<NegBackward0>\)$' <<<"$out" | tr -dc '0-9.\n')
check "nn_tutorial: first loss near ln 10 = 2.30 ($first)" close "$first" 2.30 0.5
check "nn_tutorial: fit lines" [ "$(count "$out" '^[01] [0-9]+\.[0-9]+$')" -eq 10 ]
check "nn_tutorial: cuda line" has "$out" "$("$bin" -e 'print(torch.cuda.is_available())')"
out=$("$bin" "$dir/nn_tutorial.lua" --data-root /nonexistent 2>&1)
check "nn_tutorial: missing data fails" [ $? -ne 0 ]
check "nn_tutorial: missing data message" has "$out" "FashionMNIST: dataset not found: expected train-images-idx3-ubyte.gz"

finish
