#!/usr/bin/env bash
# Installs the Debian packages nnrepl needs, only those missing (apt-get, with sudo when not root).
set -euo pipefail
pkgs=(build-essential cmake pkg-config liblua5.4-dev lua5.4 libopenblas-dev libdnnl-dev libedit-dev zlib1g-dev tmux libpng-dev libturbojpeg0-dev dataset-fashion-mnist libgloo-dev libkissfft-dev libssl-dev libpcre2-dev libutf8proc-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
