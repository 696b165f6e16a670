#!/usr/bin/env bash
# Installs the Debian 12 packages NeatTensor needs, only when one is missing,
# so `make run` / `make test` stay quick once a machine is set up.
#
#   install-deps.sh run  [EXTRA...]   what building and running `neat` needs
#   install-deps.sh test [EXTRA...]   that, plus the test and benchmark tools
#
# No service is left enabled or running: packages that ship one (prometheus,
# a test tool here: promtool and a server the tests start themselves) are
# installed with service starts refused and their boot links removed.
set -euo pipefail

mode=${1:-run}
shift || true

run_packages=(
  build-essential cmake ninja-build pkg-config
  libopencv-dev libopencv-dnn-dev
  libmosquitto-dev librdkafka-dev
  libonnx-dev libprotobuf-dev python3-onnx
  # libtorch computes through BLAS: without an optimised one, Debian's
  # reference libblas3 makes a YOLOv8n frame 3x slower on one thread.
  libtorch-dev python3-torch libopenblas0-openmp
  nlohmann-json3-dev libcli11-dev libdlpack-dev libcpp-httplib-dev
  libsimdjson-dev libpng-dev libhwy-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  libdrm-dev libegl-dev libgles-dev libegl-mesa0 libgl1-mesa-dri
)
test_packages=(
  git
  libgtest-dev libgmock-dev libbenchmark-dev libyuv-dev
  gstreamer1.0-tools
  python3-dev python3-numpy python3-pybind11 python3-pytest
  libonnx-testdata
  prometheus
  mosquitto mosquitto-clients openssl
  gir1.2-gst-rtsp-server-1.0 python3-gi
  clang-16 libclang-rt-16-dev
)
# Packages whose maintainer scripts enable and start a service.
services=(prometheus mosquitto)

case "$mode" in
  run) packages=("${run_packages[@]}") ;;
  test) packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *)
    echo "usage: install-deps.sh run|test [EXTRA_PACKAGE...]" >&2
    exit 2
    ;;
esac
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

# invoke-rc.d asks /usr/sbin/policy-rc.d before starting a service: exit 101
# refuses. Ours is temporary; one already there (Docker images ship one) stays.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# temporary, scripts/install-deps.sh: no service starts\nexit 101\n' |
    $sudo tee "$policy" > /dev/null
  $sudo chmod 755 "$policy"
  own_policy=1
fi
cleanup() { if [ "$own_policy" = 1 ]; then $sudo rm -f "$policy"; fi; }
trap cleanup EXIT

$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

# A service package is a tool here: leave it disabled at boot and stopped.
for s in "${services[@]}"; do
  for p in "${missing[@]}"; do
    [ "$p" = "$s" ] || continue
    if command -v deb-systemd-helper > /dev/null; then
      $sudo deb-systemd-helper disable "$s.service" > /dev/null 2>&1 || true
    fi
    if [ -x "/etc/init.d/$s" ] && command -v update-rc.d > /dev/null; then
      $sudo update-rc.d "$s" disable > /dev/null 2>&1 || true
    fi
    if command -v systemctl > /dev/null && [ -d /run/systemd/system ]; then
      $sudo systemctl stop "$s.service" > /dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$s" ]; then
      $sudo "/etc/init.d/$s" stop > /dev/null 2>&1 || true
    fi
  done
done
