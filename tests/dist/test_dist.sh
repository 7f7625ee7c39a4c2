#!/usr/bin/env bash
# torch.distributed on CPU (gloo), ranks on 127.0.0.1: collectives and DDP with 2 and
# 3 ranks through the launcher (each rank counts its checks), the profiler's collective
# events, rendezvous by hand
# (tcp://, file://, two launchers as two nodes), failures (a rank that exits, is
# killed, hangs or never arrives) and DataParallel without GPUs.
# Usage: test_dist.sh path/to/nnrepl. Last line: "N passed, N failed".
nnrepl=$(cd "$(dirname "${1:-build/nnrepl}")" && pwd)/$(basename "${1:-build/nnrepl}")
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 skipped=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; [ -f "$tmp/out" ] && sed 's/^/    /' "$tmp/out" | tail -n 40; }
free_port() { "$nnrepl" -e 'print(torch._dist.free_port())'; }

# A launcher run whose ranks count their own checks: every rank must report, with 0 failed.
ranks_run() { # name nproc script [args]
  local name=$1 n=$2; shift 2
  timeout 300 "$nnrepl" --nproc-per-node "$n" "$@" >"$tmp/out" 2>&1
  local rc=$? reports=0 p f
  while read -r p f; do
    passed=$((passed + p)) failed=$((failed + f)) reports=$((reports + 1))
  done < <(sed -nE 's/^\[rank[0-9]+\]: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$tmp/out")
  if [ "$rc" -ne 0 ] || [ "$reports" -ne "$n" ]; then fail "$name: exit $rc, $reports of $n ranks reported"; else pass; fi
}

# NCCL where there are two GPUs or more (the GPU machine)
nccl_tests() {
if "$nnrepl" -e 'os.exit(torch.distributed.is_nccl_available() and torch.cuda.is_available() and torch.cuda.device_count() >= 2 and 0 or 1)' 2>/dev/null; then
  ngpu=$("$nnrepl" -e 'print(torch.cuda.device_count())')
  ranks_run "nccl, $ngpu ranks" "$ngpu" "$dir/nccl.lua" 64
  grep -E 'bandwidth|busbw' "$tmp/out" | head -n 4
  ranks_run "SyncBatchNorm (nccl), $ngpu ranks" "$ngpu" "$dir/syncbn.lua" nccl
  ranks_run "DDP communication hooks and futures (nccl), $ngpu ranks" "$ngpu" "$dir/comm_hooks.lua" nccl
  ranks_run "DDP moves inputs to device_ids[0] (nccl), $ngpu ranks" "$ngpu" "$dir/ddp_inputs.lua" nccl
  ranks_run "DDP on cuda:rank without set_device (nccl), $ngpu ranks" "$ngpu" "$dir/ddp_no_set_device.lua"
  ranks_run "PowerSGD hooks (nccl), $ngpu ranks" "$ngpu" "$dir/powersgd.lua" nccl
  ranks_run "local SGD and model averaging (nccl), $ngpu ranks" "$ngpu" "$dir/local_sgd.lua" nccl
  ranks_run "profiler (nccl), $ngpu ranks" "$ngpu" "$dir/profiler.lua" nccl
  ranks_run "device mesh (nccl), $ngpu ranks" "$ngpu" "$dir/device_mesh.lua" nccl
  ranks_run "FSDP (nccl), $ngpu ranks" "$ngpu" "$dir/fsdp.lua" nccl
  ranks_run "FSDP2 fully_shard (nccl), $ngpu ranks" "$ngpu" "$dir/fsdp2.lua" nccl
  ranks_run "FSDP2 unshard, prefetch, clipping (nccl), $ngpu ranks" "$ngpu" "$dir/fsdp2_extras.lua" nccl
  ranks_run "state dicts: broadcast_from_rank0 (nccl), $ngpu ranks" "$ngpu" "$dir/state_dict_broadcast.lua" nccl
  ranks_run "distributed checkpoint (nccl), $ngpu ranks" "$ngpu" "$dir/dcp.lua" self "$tmp/dcpg" nccl
  ranks_run "distributed checkpoint: save (nccl), $ngpu ranks" "$ngpu" "$dir/dcp.lua" save "$tmp/dcpg1" nccl
  ranks_run "distributed checkpoint: load on 2 ranks (nccl)" 2 "$dir/dcp.lua" load "$tmp/dcpg1" nccl
  ranks_run "Join (nccl), $ngpu ranks" "$ngpu" "$dir/join.lua" nccl
  ranks_run "ZeroRedundancyOptimizer (nccl), $ngpu ranks" "$ngpu" "$dir/zero.lua" nccl
  ranks_run "pipeline parallelism (nccl), $ngpu ranks" "$ngpu" "$dir/pipelining.lua" nccl
  ranks_run "tensor parallel (nccl), $ngpu ranks" "$ngpu" "$dir/tensor_parallel.lua" nccl
  timeout 120 "$nnrepl" "$dir/dataparallel_gpu.lua" >"$tmp/out" 2>&1
  line=$(tail -n 1 "$tmp/out")
  if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
  else fail "dataparallel_gpu.lua: no result line"; fi
  sizes=$(sed -nE 's/.*In Model: input size torch.Size\(\[([0-9]+), 5\]\).*/\1/p' "$tmp/out" | head -n "$ngpu" | sort -rn | paste -sd, -)
  expect=$("$nnrepl" -e "print(table.concat(nn.parallel.chunk_sizes(30, $ngpu), ','))")
  echo "document 003 on $ngpu GPUs: 30 rows split $sizes"
  [ "$sizes" = "$expect" ] && pass || fail "30 rows over $ngpu GPUs: $sizes, expected $expect"
else skipped=$((skipped + 1)); fi
}

finish() {
  rm -f "$tmp/out"
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
}

# DIST_NCCL_ONLY=1: only the NCCL part (on the GPU machine, where the gloo part has run in CI)
if [ "${DIST_NCCL_ONLY:-}" = 1 ]; then nccl_tests; finish; exit; fi

gloo_tests() {
for n in 2 3; do
  ranks_run "collectives, $n ranks" "$n" "$dir/collectives.lua"
  ranks_run "DDP, $n ranks" "$n" "$dir/ddp.lua"
  ranks_run "DDP inputs without device_ids, $n ranks" "$n" "$dir/ddp_inputs.lua"
  ranks_run "init again after destroy, at the same address, $n ranks" "$n" "$dir/reinit.lua"
  ranks_run "DDP communication hooks and futures, $n ranks" "$n" "$dir/comm_hooks.lua"
  ranks_run "PowerSGD hooks, $n ranks" "$n" "$dir/powersgd.lua"
  ranks_run "local SGD and model averaging, $n ranks" "$n" "$dir/local_sgd.lua"
  ranks_run "SyncBatchNorm, $n ranks" "$n" "$dir/syncbn.lua"
  ranks_run "subgroups and more collectives, $n ranks" "$n" "$dir/groups.lua"
  ranks_run "error classes and store queues, $n ranks" "$n" "$dir/errors.lua"
  ranks_run "options classes, ProcessGroup methods, split_group, $n ranks" "$n" "$dir/pg_api.lua"
  ranks_run "device mesh, $n ranks" "$n" "$dir/device_mesh.lua"
  ranks_run "FSDP, $n ranks" "$n" "$dir/fsdp.lua"
  ranks_run "FSDP2 fully_shard, $n ranks" "$n" "$dir/fsdp2.lua"
  ranks_run "FSDP2 unshard, prefetch, clipping, $n ranks" "$n" "$dir/fsdp2_extras.lua"
  ranks_run "state dicts: broadcast_from_rank0, $n ranks" "$n" "$dir/state_dict_broadcast.lua"
  ranks_run "distributed checkpoint (DDP, plain, errors), $n ranks" "$n" "$dir/dcp.lua" self "$tmp/dcp$n"
  ranks_run "Join (uneven inputs), $n ranks" "$n" "$dir/join.lua"
  ranks_run "ZeroRedundancyOptimizer, $n ranks" "$n" "$dir/zero.lua"
  ranks_run "pipeline parallelism (GPipe, 1F1B), $n ranks" "$n" "$dir/pipelining.lua"
  ranks_run "tensor parallel, $n ranks" "$n" "$dir/tensor_parallel.lua"
done
ranks_run "distributed checkpoint: save on 2 ranks" 2 "$dir/dcp.lua" save "$tmp/dcp23"
ranks_run "distributed checkpoint: load on 3 ranks" 3 "$dir/dcp.lua" load "$tmp/dcp23"
ranks_run "distributed checkpoint: save on 3 ranks" 3 "$dir/dcp.lua" save "$tmp/dcp32"
ranks_run "distributed checkpoint: load on 2 ranks" 2 "$dir/dcp.lua" load "$tmp/dcp32"
ranks_run "device mesh (2-D), 4 ranks" 4 "$dir/device_mesh.lua"
ranks_run "FSDP2 over a 2-D mesh's dp, 4 ranks" 4 "$dir/fsdp2_extras.lua"
ranks_run "local SGD and hierarchical model averaging, 4 ranks" 4 "$dir/local_sgd.lua"
ranks_run "stores, 2 ranks" 2 "$dir/stores.lua"
ranks_run "profiler, 2 ranks" 2 "$dir/profiler.lua"

# DataParallel without GPUs (one process)
timeout 60 "$nnrepl" "$dir/dataparallel.lua" >"$tmp/out" 2>&1
line=$(tail -n 1 "$tmp/out")
if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
  passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
else fail "dataparallel.lua: no result line"; fi

# The launcher's environment, its output prefix and the script's arguments
timeout 60 "$nnrepl" --nproc-per-node 3 "$dir/env.lua" a b >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^\[rank2\]: RANK=2 LOCAL_RANK=2 WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=[0-9]* OMP_NUM_THREADS=1$' "$tmp/out" \
  && [ "$(grep -c 'sum=3 args=a,b$' "$tmp/out")" -eq 3 ]; then pass; else fail "launcher environment (exit $rc)"; fi

# Two launchers as two nodes of two ranks each, meeting at one master port
port=$(free_port)
timeout 60 "$nnrepl" --nnodes 2 --node-rank 1 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$port" "$dir/env.lua" >"$tmp/node1" 2>&1 &
node1=$!
timeout 60 "$nnrepl" --nnodes=2 --node_rank=0 --nproc_per_node=2 --master_addr=127.0.0.1 --master_port="$port" "$dir/env.lua" >"$tmp/out" 2>&1
rc0=$?
wait $node1
rc1=$?
cat "$tmp/node1" >>"$tmp/out"
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && grep -q '^\[rank3\]: RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 ' "$tmp/out" \
  && [ "$(grep -c 'sum=4 args=$' "$tmp/out")" -eq 4 ]; then pass; else fail "two nodes (exit $rc0, $rc1)"; fi

# Ranks started by hand, as document 004's scripts: tcp:// and file://
for method in "tcp://127.0.0.1:$(free_port)" "file://$tmp/rendezvous" "tcp://127.0.0.1:$(free_port)?rank=X"; do
  : >"$tmp/out"
  pids=()
  for r in 0 1 2; do
    m=${method/rank=X/rank=$r&world_size=3}
    timeout 60 "$nnrepl" "$dir/byhand.lua" --rank $r --world_size 3 --init_method "$m" >>"$tmp/out" 2>&1 &
    pids+=($!)
  done
  ok=1
  for p in "${pids[@]}"; do wait "$p" || ok=0; done
  if [ $ok -eq 1 ] && [ "$(grep -c ': ok$' "$tmp/out")" -eq 3 ]; then pass; else fail "by hand with $method"; fi
done
[ ! -e "$tmp/rendezvous" ] && pass || fail "the last rank out removes the file:// rendezvous file"

# A rank that exits, is killed or hangs: the launcher ends the others and names it (within 60 s)
expect_launch_failure() { # name pattern status script args...
  local name=$1 pattern=$2 want=$3; shift 3
  local start=$SECONDS
  timeout 90 "$nnrepl" --nproc-per-node 3 "$@" >"$tmp/out" 2>&1
  local rc=$? took=$((SECONDS - start))
  if [ $rc -eq "$want" ] && [ $took -le 60 ] && grep -q "$pattern" "$tmp/out"; then pass
  else fail "$name: exit $rc after $took s (want $want, '$pattern')"; fi
}
expect_launch_failure "a rank exits" 'nnrepl: rank 1 (local rank 1, pid [0-9]*) exited with status 3; stopping the other ranks' 3 "$dir/fail.lua" exit
expect_launch_failure "a rank is killed" 'nnrepl: rank 1 (local rank 1, pid [0-9]*) was killed by signal 9 (Killed); stopping the other ranks' 137 "$dir/fail.lua" kill
expect_launch_failure "a rank hangs" 'nnrepl: rank [02] (local rank [02], pid [0-9]*) exited with status 1; stopping the other ranks' 1 "$dir/fail.lua" hang 3
grep -q 'all_reduce failed on rank [02] of 3 (gloo): gloo all_reduce: .*[Tt]imed out' "$tmp/out" && pass || fail "a hung peer: the timeout is reported with the rank"

# Ctrl-C at the launcher reaches every rank
timeout 60 "$nnrepl" --nproc-per-node 2 -e 'torch.distributed.init_process_group("gloo"); print("up"); io.stdout:flush(); os.execute("sleep 30")' >"$tmp/out" 2>&1 &
launcher=$!
for _ in $(seq 100); do [ "$(grep -c up "$tmp/out")" -eq 2 ] && break; sleep 0.1; done
start=$SECONDS
kill -INT $launcher
wait $launcher
rc=$?
[ $rc -ne 0 ] && [ $((SECONDS - start)) -le 10 ] && pass || fail "SIGINT to the launcher (exit $rc)"

# A rank that never arrives: init times out naming the missing rank
port=$(free_port)
start=$SECONDS
timeout 60 "$nnrepl" -e "torch.distributed.init_process_group('gloo', {init_method='tcp://127.0.0.1:$port', rank=0, world_size=3, timeout=2})" >"$tmp/out" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $((SECONDS - start)) -le 15 ] && grep -q "init_process_group: timed out after 2 s waiting for all 3 ranks to join at tcp://127.0.0.1:$port: 2 missing (ranks 1, 2) \[rank 0 of 3\]" "$tmp/out"; then pass
else fail "a rank that never arrives (exit $rc)"; fi
start=$SECONDS
timeout 60 "$nnrepl" -e "torch.distributed.init_process_group('gloo', {init_method='tcp://127.0.0.1:$port', rank=1, world_size=2, timeout=1})" >"$tmp/out" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $((SECONDS - start)) -le 15 ] && grep -q "init_process_group: store tcp://127.0.0.1:$port: cannot connect to 127.0.0.1:$port (Connection refused) after 1 s \[rank 1 of 2\]" "$tmp/out"; then pass
else fail "no rank 0 to meet (exit $rc)"; fi

# The store's host dies while the others wait to join: the store's error at once, not a timeout
port=$(free_port)
"$nnrepl" -e "torch.distributed.init_process_group('gloo', {init_method='tcp://127.0.0.1:$port', rank=0, world_size=3, timeout=30})" >/dev/null 2>&1 &
host=$! # nnrepl itself, not a timeout wrapper: the kill must reach the store's host
sleep 1
timeout 60 "$nnrepl" -e "torch.distributed.init_process_group('gloo', {init_method='tcp://127.0.0.1:$port', rank=1, world_size=3, timeout=30})" >"$tmp/out" 2>&1 &
joiner=$!
sleep 1
start=$SECONDS
kill -9 $host
wait $joiner 2>/dev/null
rc=$?
if [ $rc -ne 0 ] && [ $((SECONDS - start)) -le 15 ] && grep -q "init_process_group: the store at tcp://127.0.0.1:$port failed while the ranks were joining: " "$tmp/out" && ! grep -q "timed out" "$tmp/out"; then pass
else fail "the store's host dies while ranks join (exit $rc): $(cat "$tmp/out")"; fi

# Argument errors
check_error() { # name pattern lua
  timeout 60 env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE "$nnrepl" -e "$3" >"$tmp/out" 2>&1
  if [ $? -ne 0 ] && grep -qF "$2" "$tmp/out"; then pass; else fail "$1"; fi
}
check_error "env:// without MASTER_ADDR" "environment variable MASTER_ADDR expected, but not set" 'torch.distributed.init_process_group("gloo")'
check_error "unknown backend" "Invalid backend: 'mpi'" 'torch.distributed.init_process_group("mpi", {init_method="tcp://127.0.0.1:1", rank=0, world_size=1})'
check_error "rank out of range" "rank 2 is out of range for world_size 2" 'torch.distributed.init_process_group("gloo", {init_method="tcp://127.0.0.1:1", rank=2, world_size=2})'
check_error "bad init_method" "unknown init_method 'udp://x'" 'torch.distributed.init_process_group("gloo", {init_method="udp://x", rank=0, world_size=1})'
check_error "unknown keyword" "unknown keyword 'ranks'" 'torch.distributed.init_process_group("gloo", {ranks=1})'
if "$nnrepl" -e 'os.exit(torch.distributed.is_nccl_available() and 0 or 1)'; then pass
else check_error "nccl without CUDA" "Distributed package doesn't have NCCL built in" 'torch.distributed.init_process_group("nccl", {init_method="tcp://127.0.0.1:1", rank=0, world_size=1})'; fi
timeout 60 "$nnrepl" --nproc-per-node 2 >"$tmp/out" 2>&1; [ $? -ne 0 ] && grep -q "needs a script" "$tmp/out" && pass || fail "launcher without a script"
# one rank: a world of one works and prints without a prefix
timeout 60 "$nnrepl" --nproc-per-node 1 -e 'torch.distributed.init_process_group("gloo"); local t = torch.ones(2); torch.distributed.all_reduce(t); print("one", t:sum():item())' >"$tmp/out" 2>&1
grep -q '^one	2.0$' "$tmp/out" && pass || fail "a world of one"

}

if "$nnrepl" -e 'os.exit(torch.distributed.is_gloo_available() and 0 or 1)'; then gloo_tests
else echo "the gloo backend is not available (libgloo-dev was missing at build time): its tests are skipped"; skipped=$((skipped + 1)); fi

nccl_tests

finish
