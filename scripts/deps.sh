# Sourced by the scripts: installs the Debian packages named in "$@" that are missing.
# Runs apt-get update first, and apt-get install -y only when something is missing.
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

# What building and testing redlock needs.
BUILD_PACKAGES=(cmake g++ make ninja-build pkg-config libhiredis-dev libcli11-dev nlohmann-json3-dev doctest-dev
  libssl-dev)
TEST_PACKAGES=(redis-server redis-tools python3 python3-redis openssl groff-base man-db procps iproute2 nftables
  faketime ltrace dpkg-dev file zsh jq)
# What scripts/bench measures redlock against (references only, never redlock's dependencies);
# node-redlock comes from npm (bench/node/package.json), nodejs and npm only when node is missing.
BENCH_PACKAGES=(hyperfine time util-linux redis-server redis-tools python3 python3-redis valgrind)

# Configures and builds into $1 with the extra CMake arguments that follow; -j2 on this 2-core machine.
build_redlock() {
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j2
}
