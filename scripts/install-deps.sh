#!/usr/bin/env bash
# Installs the Debian 12 packages NeatTensor builds against, only when one is
# missing, so `make run` / `make test` stay quick once a machine is set up.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libopencv-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev
  prometheus
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-tools
  libdrm-dev libegl-dev libgles-dev libegl-mesa0 libgl1-mesa-dri
  libdlpack-dev python3-dev python3-numpy
  libopencv-dnn-dev libonnx-dev libprotobuf-dev python3-onnx
  clang-16 libclang-rt-16-dev
)

# Extra packages for optional targets (e.g. python3-matplotlib for make bench-report).
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "neat: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
