# Sourced by the device-run scripts: unpacks .devbuild (bench/pack_device.sh) once and
# sets the environment; $nn is the nnrepl binary, $OUT the folder that comes back.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[ -x .devbuild/nnrepl ] || { [ -f .devbuild/pack.tar.xz ] && tar -C .devbuild -xJf .devbuild/pack.tar.xz; }
# NCCL comes with the machine's PyTorch when the system has none; so does cuFFT (libcufft.so.12)
nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
cufft_dir=
if ! ldconfig -p 2>/dev/null | grep -q 'libcufft\.so\.12 '; then
  cufft_dir=$(python3 -c 'import glob, os, nvidia; print(next((os.path.dirname(f) for p in nvidia.__path__ for f in glob.glob(os.path.join(p, "**", "libcufft.so.12"), recursive=True)), ""))' 2>/dev/null)
fi
export LD_LIBRARY_PATH=$root/.devbuild/lib:${LD_LIBRARY_PATH:-}${nccl_dir:+:$nccl_dir}${cufft_dir:+:$cufft_dir}
# Debian's OpenBLAS does not recognise the GPU machine's Xeon and falls back to slow kernels
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
# NVLink multicast stays off (the device tool's KINDS.md)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nn=$root/.devbuild/nnrepl
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
