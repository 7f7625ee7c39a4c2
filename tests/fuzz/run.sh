#!/usr/bin/env bash
# Builds every tests/fuzz/fuzz_*.c as a libFuzzer target (clang, AddressSanitizer)
# against the engine, and runs each for N seconds from a corpus of small valid
# inputs. Exit status 1 if any target crashed or failed to build.
# Usage: tests/fuzz/run.sh [seconds per target, default 60] [build dir, default build-fuzz]
set -uo pipefail
secs=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${2:-$root/build-fuzz}
cc=${CC:-clang}
command -v "$cc" >/dev/null || cc=clang-14
mkdir -p "$out/obj" "$out/corpus"
blas_inc=$(ls -d /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas 2>/dev/null | head -n 1)
fft_cflags=$(pkg-config --cflags kissfft-float) fft_libs=$(pkg-config --libs kissfft-float)
flags=(-g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=address,fuzzer-no-link -fno-omit-frame-pointer -I"$root/engine" ${blas_inc:+-I"$blas_inc"} $fft_cflags)

# the engine, as an archive so each target pulls in only what it needs (make: incremental, parallel)
cat > "$out/Makefile" <<MK
.RECIPEPREFIX := >
SRCS := \$(wildcard $root/engine/*.c $root/engine/cpu/*.c $root/engine/data/*.c)
OBJS := \$(patsubst $root/%.c,obj/%.o,\$(SRCS))
libengine.a: \$(OBJS)
> rm -f \$@ && ar rcs \$@ \$^
obj/%.o: $root/%.c
> @mkdir -p \$(dir \$@)
> $cc ${flags[*]} -MMD -MP -c \$< -o \$@
-include \$(OBJS:.o=.d)
MK
make -s -C "$out" -j "$(nproc)" libengine.a || { echo "FAIL: building the engine for fuzzing"; exit 1; }
libs=(-lopenblas -ldnnl -lgomp $fft_libs -lz -lm -lpthread)
for l in png16 turbojpeg; do
  [ -e "/usr/lib/x86_64-linux-gnu/lib$l.so" ] || [ -e "/usr/lib/x86_64-linux-gnu/lib$l.a" ] && libs=(-l$l "${libs[@]}")
done

# seeds: a few valid inputs per parser (tests/fuzz/corpus_<name>/ adds more where it exists)
seed() { # corpus, name, printf-format bytes
  mkdir -p "$out/corpus/$1"; printf "$3" > "$out/corpus/$1/$2"
}
seed idx u8 '\0\0\10\2\0\0\0\2\0\0\0\3abcdef'
seed idx f32 '\0\0\15\1\0\0\0\2\77\200\0\0\300\0\0\0'
seed idx i16 '\0\0\13\1\0\0\0\1\377\376'
gzip -c "$out/corpus/idx/u8" > "$out/corpus/idx/u8.gz"
mkdir -p "$out/corpus/cifar"
{ printf '\3'; head -c 3072 /dev/urandom; printf '\11'; head -c 3072 /dev/zero; } > "$out/corpus/cifar/two"
gzip -c "$out/corpus/cifar/two" > "$out/corpus/cifar/two.gz"
{ printf '\3\41'; head -c 3072 /dev/urandom; } > "$out/corpus/cifar/hundred" # a CIFAR-100 record

status=0
for src in "$root"/tests/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  short=${name#fuzz_}
  bin="$out/$name"
  if ! "$cc" "${flags[@]}" -fsanitize=fuzzer "$src" "$out/libengine.a" "${libs[@]}" -o "$bin"; then
    echo "FAIL $name: build"; status=1; continue
  fi
  corpus="$out/corpus/$short"
  mkdir -p "$corpus" "$out/crashes/$short"
  extra=()
  [ -d "$root/tests/fuzz/corpus_$short" ] && extra=("$root/tests/fuzz/corpus_$short")
  log="$out/$name.log"
  if ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$out/crashes/$short/" "$corpus" "${extra[@]}" >"$log" 2>&1; then
    # libFuzzer's closing "Done N runs" (a "#N" can also sit in its recommended dictionary)
    runs=$(grep -Eo '^Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || grep -Eo '^#[0-9]+' "$log" | tail -n 1)
    echo "ok $name: $runs runs in ${secs}s"
  else
    tail -n 40 "$log"; echo "FAIL $name: crash (artifacts in $out/crashes/$short)"; status=1
  fi
done
exit $status
