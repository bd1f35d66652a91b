#!/usr/bin/env bash
# FlashCore development / CI setup.
#
#   scripts/setup.sh            Debian packages + host Kokkos 3.4.01 + Kokkos 5 headers
#   scripts/setup.sh --cuda     ... and the CUDA Kokkos 3.4.01 (one GPU arch)
#   scripts/setup.sh --kokkos4  ... and Kokkos 4.x from a source tarball (host; with --cuda
#                               also its CUDA build), for the compatibility runs; the
#                               tarball is FLASHCORE_KOKKOS4_TARBALL, else
#                               ../shared/deps/kokkos-4.6.99.tar.gz beside the repository
#                               (CI's snapshot); without either, a note and no 4.x
#   scripts/setup.sh --quiet    only errors, notes and the final assignments
#
# Idempotent: everything it builds lives in the cache root
#   FLASHCORE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/flashcore)
# and is rebuilt only when its key changes (configuration, compilers, the
# patches in cmake/kokkos/). A second run is a no-op that takes about a second.
# Results are printed at the end and written to $FLASHCORE_CACHE/env.sh:
#   FLASHCORE_KOKKOS_HOST=<prefix>  FLASHCORE_KOKKOS_CUDA=<prefix or empty>
#   FLASHCORE_KOKKOS4_HOST=<prefix or empty>  FLASHCORE_KOKKOS4_CUDA=<prefix or empty>
#   FLASHCORE_KOKKOS5_INCLUDE=<dir or empty>
#
# Environment knobs (all optional):
#   FLASHCORE_CACHE               cache root (see above)
#   Kokkos_ROOT / FLASHCORE_KOKKOS_ROOT
#                                 use this Kokkos install (must have
#                                 lib*/cmake/Kokkos) instead of building one; a
#                                 CUDA-enabled one is used as the cuda config
#   FLASHCORE_KOKKOS_CUDA_ROOT    use this CUDA-enabled Kokkos install for --cuda
#   FLASHCORE_KOKKOS4_TARBALL     Kokkos 4.x source tarball for --kokkos4 (named
#                                 kokkos-X.Y.Z.tar.gz, top folder kokkos-X.Y.Z/; patches from
#                                 cmake/kokkos/X.Y.Z/ when that folder exists)
#   FLASHCORE_CUDA_ARCH           89 or 90 (default: local GPU's compute
#                                 capability from nvidia-smi, else 90)
#   CUDA_HOME / CUDA_PATH         CUDA toolkit (default: nvcc in PATH, else
#                                 /usr/local/cuda)
#   FLASHCORE_JOBS                parallel build jobs (default: nproc)
#   FLASHCORE_SKIP_DEPS=1         do not check/install Debian packages
#   FLASHCORE_EXTRA_PACKAGES      extra Debian packages to ensure
#   FLASHCORE_SKIP_KOKKOS5=1      skip the Kokkos 5 headers (also --no-kokkos5)
#   FLASHCORE_KEEP_DOWNLOADS=1    keep the trilinos tarball after extraction
#   FLASHCORE_DEBIAN_MIRROR       default http://deb.debian.org/debian
set -Eeuo pipefail

# The Kokkos this script builds by default (Debian's trilinos source); --kokkos4 adds one from
# a tarball. select_kokkos switches between them (version, source, patches).
readonly DEFAULT_KOKKOS_VERSION=3.4.01
KOKKOS_VERSION=$DEFAULT_KOKKOS_VERSION
# Bump to force a rebuild of every cached Kokkos (e.g. after changing the way
# this script configures it without changing the cmake arguments).
readonly SETUP_REV=1

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd -P)
PATCH_ROOT=$REPO_ROOT/cmake/kokkos
MIRROR=${FLASHCORE_DEBIAN_MIRROR:-http://deb.debian.org/debian}

WANT_CUDA=0
WANT_K4=0
QUIET=0
WANT_K5=1
[[ ${FLASHCORE_SKIP_KOKKOS5:-0} == 1 ]] && WANT_K5=0

usage() { sed -n '2,/^set -Eeuo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

for arg in "$@"; do
  case $arg in
    --cuda) WANT_CUDA=1 ;;
    --kokkos4) WANT_K4=1 ;;
    --quiet | -q) QUIET=1 ;;
    --no-kokkos5) WANT_K5=0 ;;
    -h | --help) usage; exit 0 ;;
    *) printf 'setup.sh: unknown option: %s (try --help)\n' "$arg" >&2; exit 2 ;;
  esac
done

# ---------------------------------------------------------------- helpers ---
now_ns() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
say() { if [[ $QUIET == 0 ]]; then printf '[setup] %s\n' "$*"; fi; }
note() { printf '[setup] NOTE: %s\n' "$*" >&2; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
on_err() {
  printf '[setup] ERROR: command failed (exit %s) at %s line %s: %s\n' \
    "$1" "${BASH_SOURCE[1]:-setup.sh}" "$2" "$3" >&2
}
trap 'on_err $? $LINENO "$BASH_COMMAND"' ERR

T_START=$(now_ns)
TIMINGS=()
STEP_NAME=""
STEP_T=0
step_begin() { STEP_NAME=$1; STEP_T=$(now_ns); say "== $1"; }
step_end() {
  local t; t=$(secs_since "$STEP_T")
  TIMINGS+=("$(printf '%-38s %6ss %s' "$STEP_NAME" "$t" "${1:-}")")
  say "   $STEP_NAME: ${1:-done} (${t}s)"
}

# run_logged LOG CMD...: run an external command with all output appended to
# LOG; on failure print the tail of LOG and exit.
run_logged() {
  local log=$1; shift
  printf '+ %s\n' "$*" >>"$log"
  if ! "$@" >>"$log" 2>&1 </dev/null; then
    printf '[setup] ERROR: command failed: %s\n' "$*" >&2
    printf '[setup] ---- last 60 lines of %s ----\n' "$log" >&2
    tail -n 60 "$log" >&2
    printf '[setup] ---- end of %s ----\n' "$log" >&2
    exit 1
  fi
}

sha() { sha256sum | cut -c1-16; }

# ------------------------------------------------------------- cache root ---
if [[ -n ${FLASHCORE_CACHE:-} ]]; then
  CACHE=$FLASHCORE_CACHE
elif [[ -n ${XDG_CACHE_HOME:-} ]]; then
  CACHE=$XDG_CACHE_HOME/flashcore
else
  CACHE=${HOME:?neither FLASHCORE_CACHE, XDG_CACHE_HOME nor HOME is set}/.cache/flashcore
fi
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd -P)
[[ $CACHE != / ]] || die "refusing to use / as the cache root"
case $CACHE/ in
  "$REPO_ROOT"/*) die "FLASHCORE_CACHE ($CACHE) must be outside the source tree" ;;
esac
mkdir -p "$CACHE/logs" "$CACHE/src" "$CACHE/build" "$CACHE/downloads"
export FLASHCORE_CACHE=$CACHE
JOBS=${FLASHCORE_JOBS:-$(nproc 2>/dev/null || echo 2)}

# One setup at a time per cache (CI jobs may share one).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.setup.lock"
  if ! flock -n 9; then
    say "waiting for another setup.sh using $CACHE ..."
    flock -w 7200 9 || die "timed out waiting for the lock on $CACHE/.setup.lock"
  fi
fi

say "cache: $CACHE"

# ------------------------------------------------------- Debian packages ---
REQUIRED_PKGS=(cmake ninja-build g++ gfortran make patch libgtest-dev libbenchmark-dev libopenmpi-dev
  python3 xz-utils ca-certificates)
# shellcheck disable=SC2206
REQUIRED_PKGS+=(${FLASHCORE_EXTRA_PACKAGES:-})

ensure_packages() {
  step_begin "debian packages"
  if [[ ${FLASHCORE_SKIP_DEPS:-0} == 1 ]]; then
    step_end "skipped (FLASHCORE_SKIP_DEPS=1)"
    return
  fi
  command -v dpkg-query >/dev/null 2>&1 ||
    die "dpkg-query not found: this script expects Debian (set FLASHCORE_SKIP_DEPS=1 to skip the package step)"
  local installed missing=() p
  installed=$(dpkg-query -W -f='${Package}\t${db:Status-Abbrev}\n' "${REQUIRED_PKGS[@]}" 2>/dev/null || true)
  for p in "${REQUIRED_PKGS[@]}"; do
    if ! grep -qxE "${p//+/\\+}"$'\t'"ii ?" <<<"$installed"; then missing+=("$p"); fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    step_end "all present"
    return
  fi
  local -a sudo=()
  if [[ $EUID -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      die "missing Debian packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}"
    fi
  fi
  say "installing: ${missing[*]}"
  local log=$CACHE/logs/apt-install.log
  : >"$log"
  run_logged "$log" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q update
  run_logged "$log" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y \
    --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"
  step_end "installed ${missing[*]}"
}

# ---------------------------------------------------- private apt config ---
# apt_opts DIR SOURCES_LINE: apt options that use only DIR (sources list,
# lists, caches, preferences) and leave the machine's apt configuration alone.
APT_OPTS=()
apt_private() {
  local d=$1 line=$2
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/preferences.d"
  printf '%s\n' "$line" >"$d/sources.list"
  : >"$d/preferences"
  APT_OPTS=(
    -o "Dir::Etc::sourcelist=$d/sources.list" -o Dir::Etc::sourceparts=-
    -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache"
    -o "Dir::Etc::preferences=$d/preferences" -o "Dir::Etc::preferencesparts=$d/preferences.d"
    -o Acquire::Languages=none -o APT::Get::List-Cleanup=0
  )
  # As root apt drops to _apt for downloads, which cannot write into our dirs.
  if [[ $EUID -eq 0 ]]; then APT_OPTS+=(-o APT::Sandbox::User=root); fi
}

# --------------------------------------------------------- Kokkos sources ---
# select_kokkos VERSION [TARBALL]: the Kokkos the build functions below work on. Without a
# tarball the source is Debian's trilinos package (3.4.01); patches: cmake/kokkos/VERSION/.
# Sets KOKKOS_VERSION, KOKKOS_TARBALL, PATCHES, PATCH_HASH, SRC_DIR and PREFIX_TAG (the part of
# the install prefixes' names that tells the versions apart: empty for the default one).
KOKKOS_TARBALL=""
select_kokkos() {
  KOKKOS_VERSION=$1
  KOKKOS_TARBALL=${2:-}
  local pdir=$PATCH_ROOT/$KOKKOS_VERSION
  PATCHES=()
  if [[ -d $pdir ]]; then
    mapfile -t PATCHES < <(find "$pdir" -maxdepth 1 -name '*.patch' -type f | LC_ALL=C sort)
  elif [[ $KOKKOS_VERSION == "$DEFAULT_KOKKOS_VERSION" ]]; then
    die "patch directory $pdir is missing"
  else
    note "no patches for Kokkos $KOKKOS_VERSION in cmake/kokkos/: building it as it is"
  fi
  PATCH_HASH=$(for p in "${PATCHES[@]}"; do basename "$p"; cat "$p"; done | sha)
  SRC_DIR=$CACHE/src/kokkos-$KOKKOS_VERSION-$PATCH_HASH
  if [[ $KOKKOS_VERSION == "$DEFAULT_KOKKOS_VERSION" ]]; then PREFIX_TAG=""; else PREFIX_TAG=-$KOKKOS_VERSION; fi
}
select_kokkos "$DEFAULT_KOKKOS_VERSION"

fetch_trilinos_orig() {  # sets ORIG_TARBALL
  local dl=$CACHE/downloads/trilinos log=$CACHE/logs/kokkos-source.log dsc orig sum
  mkdir -p "$dl"
  dsc=$(find "$dl" -maxdepth 1 -name 'trilinos_*.dsc' | LC_ALL=C sort | tail -n 1)
  if [[ -n $dsc ]]; then
    orig=$(awk '/^Checksums-Sha256:/ { f = 1; next } /^[^ ]/ { f = 0 } f && $3 ~ /\.orig\.tar\./ { print $3 }' "$dsc")
    sum=$(awk '/^Checksums-Sha256:/ { f = 1; next } /^[^ ]/ { f = 0 } f && $3 ~ /\.orig\.tar\./ { print $1 }' "$dsc")
    if [[ -n $orig && -f $dl/$orig ]] && echo "$sum  $dl/$orig" | sha256sum -c --status; then
      ORIG_TARBALL=$dl/$orig
      say "reusing $ORIG_TARBALL"
      return
    fi
  fi
  say "downloading the trilinos source package (bookworm) with a private apt config"
  apt_private "$CACHE/apt/bookworm-src" "deb-src $MIRROR bookworm main"
  run_logged "$log" apt-get -q "${APT_OPTS[@]}" update
  (cd "$dl" && run_logged "$log" apt-get -q "${APT_OPTS[@]}" source --download-only trilinos)
  dsc=$(find "$dl" -maxdepth 1 -name 'trilinos_*.dsc' | LC_ALL=C sort | tail -n 1)
  [[ -n $dsc ]] || die "apt-get source trilinos produced no .dsc in $dl (see $log)"
  orig=$(awk '/^Checksums-Sha256:/ { f = 1; next } /^[^ ]/ { f = 0 } f && $3 ~ /\.orig\.tar\./ { print $3 }' "$dsc")
  [[ -n $orig && -f $dl/$orig ]] || die "no orig tarball next to $dsc"
  ORIG_TARBALL=$dl/$orig
  rm -rf "$CACHE/apt/bookworm-src"  # ~20 MB of indexes, not needed any more
}

ensure_kokkos_src() {
  if [[ -f $SRC_DIR/.flashcore-src-ok ]]; then return; fi
  local log=$CACHE/logs/kokkos-source-$KOKKOS_VERSION.log t0 tmp kdir ver p origin
  t0=$(now_ns)
  : >"$log"
  tmp=$CACHE/src/.extract.$$
  rm -rf "$tmp" && mkdir -p "$tmp"
  if [[ -n $KOKKOS_TARBALL ]]; then
    origin=$KOKKOS_TARBALL
    say "extracting $(basename "$KOKKOS_TARBALL")"
    run_logged "$log" tar -xzf "$KOKKOS_TARBALL" -C "$tmp"
    kdir=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  else
    fetch_trilinos_orig
    origin=$ORIG_TARBALL
    say "extracting packages/kokkos from $(basename "$ORIG_TARBALL")"
    run_logged "$log" tar -xzf "$ORIG_TARBALL" -C "$tmp" --wildcards '*/packages/kokkos/*'
    kdir=$(find "$tmp" -mindepth 3 -maxdepth 3 -type d -path '*/packages/kokkos' | head -n 1)
  fi
  [[ -n $kdir && -f $kdir/CMakeLists.txt ]] || die "no Kokkos source tree in $origin"
  ver=$(sed -n 's/^set(Kokkos_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))$/\2/p' "$kdir/CMakeLists.txt" | paste -sd.)
  [[ $ver == "$KOKKOS_VERSION" ]] || die "$(basename "$origin") holds Kokkos '$ver', expected $KOKKOS_VERSION (patches are for $KOKKOS_VERSION)"
  for p in "${PATCHES[@]}"; do
    say "applying $(basename "$p")"
    run_logged "$log" patch -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch -d "$kdir" -i "$p"
  done
  rm -rf "$SRC_DIR"
  mv "$kdir" "$SRC_DIR"
  rm -rf "$tmp"
  printf 'kokkos %s from %s\npatches %s\n' "$KOKKOS_VERSION" "$(basename "$origin")" "$PATCH_HASH" >"$SRC_DIR/.flashcore-src-ok"
  # Sources patched with older patch sets are of no further use.
  for p in "$CACHE"/src/kokkos-"$KOKKOS_VERSION"-*; do
    [[ $p == "$SRC_DIR" ]] || rm -rf "$p"
  done
  if [[ ${FLASHCORE_KEEP_DOWNLOADS:-0} != 1 ]]; then rm -rf "$CACHE/downloads/trilinos"; fi
  TIMINGS+=("$(printf '%-38s %6ss' "  kokkos source (fetch+patch)" "$(secs_since "$t0")")")
}

# ------------------------------------------------------------------ probe ---
write_probe_sources() {
  local d=$1
  mkdir -p "$d"
  cat >"$d/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(flashcore_kokkos_probe CXX)
find_package(Kokkos REQUIRED)
add_executable(probe probe.cpp)
target_link_libraries(probe PRIVATE Kokkos::kokkos)
EOF
  cat >"$d/probe.cpp" <<'EOF'
// FlashCore Kokkos probe (written by scripts/setup.sh): parallel_for,
// parallel_reduce and a TeamPolicy with team scratch and a nested Max
// reduction. Must compile with Kokkos 3.4 (C++17) and Kokkos 5 (C++20).
#include <Kokkos_Core.hpp>
#include <cstdio>

using ExecSpace = Kokkos::DefaultExecutionSpace;
using ScratchView =
    Kokkos::View<double*, ExecSpace::scratch_memory_space,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

int run() {
  const int n = 1 << 12, rows = 64, cols = 128;
  Kokkos::View<double*, ExecSpace> x("x", n);
  Kokkos::parallel_for("probe_fill", Kokkos::RangePolicy<ExecSpace>(0, n),
                       KOKKOS_LAMBDA(const int i) { x(i) = 0.5 * i; });
  double sum = 0.0;
  Kokkos::parallel_reduce(
      "probe_sum", Kokkos::RangePolicy<ExecSpace>(0, n),
      KOKKOS_LAMBDA(const int i, double& acc) { acc += x(i); }, sum);
  const double want_sum = 0.5 * (double(n) * (n - 1) / 2);

  // One team per row: stage the row in level-0 team scratch, reduce its max.
  Kokkos::View<double**, ExecSpace> a("a", rows, cols);
  Kokkos::View<double*, ExecSpace> row_max("row_max", rows);
  Kokkos::parallel_for(
      "probe_fill2", Kokkos::RangePolicy<ExecSpace>(0, rows * cols),
      KOKKOS_LAMBDA(const int k) {
        const int r = k / cols, c = k % cols;
        a(r, c) = double((c * 7 + r) % cols);
      });
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = Policy::member_type;
  const size_t bytes = ScratchView::shmem_size(cols);
  Policy policy(rows, Kokkos::AUTO);
  Kokkos::parallel_for(
      "probe_team", policy.set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const Member& team) {
        const int r = team.league_rank();
        ScratchView s(team.team_scratch(0), cols);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols),
                             [&](const int c) { s(c) = a(r, c); });
        team.team_barrier();
        double m = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, cols),
            [&](const int c, double& lm) { lm = s(c) > lm ? s(c) : lm; },
            Kokkos::Max<double>(m));
        Kokkos::single(Kokkos::PerTeam(team), [&]() { row_max(r) = m; });
      });
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), row_max);
  int bad = 0;
  for (int r = 0; r < rows; ++r) bad += (h(r) != double(cols - 1));
  if (sum != want_sum || bad) {
    std::printf("probe FAILED: sum=%g (want %g), %d bad rows\n", sum, want_sum,
                bad);
    return 1;
  }
  std::printf("probe OK: %s, sum=%g, team scratch + Max reduction ok for %d rows\n",
              ExecSpace::name(), sum, rows);
  return 0;
}

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  const int rc = run();
  Kokkos::finalize();
  return rc;
}
EOF
}

have_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }

# probe_kokkos NAME PREFIX CXX RUN(0|1) LOG [ARCH]
probe_kokkos() {
  local name=$1 prefix=$2 cxx=$3 run=$4 log=$5 arch=${6:-} pdir=$CACHE/build/probe-$1
  rm -rf "$pdir"
  write_probe_sources "$pdir"
  run_logged "$log" cmake -S "$pdir" -B "$pdir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_EXTENSIONS=OFF -DKokkos_ROOT="$prefix"
  run_logged "$log" cmake --build "$pdir/build"
  if [[ -n $arch ]]; then  # the probe must carry device code for sm_$arch
    if [[ -x $CUDA_DIR/bin/cuobjdump ]]; then
      local elfs
      elfs=$("$CUDA_DIR/bin/cuobjdump" --list-elf "$pdir/build/probe" 2>&1 || true)
      printf '+ cuobjdump --list-elf probe\n%s\n' "$elfs" >>"$log"
      grep -q "sm_$arch" <<<"$elfs" || die "$name probe has no sm_$arch device code (see $log)"
    else  # minimal toolkit without cuobjdump: look for the embedded PTX target
      grep -aq "\.target sm_$arch" "$pdir/build/probe" ||
        die "$name probe has no sm_$arch device code (no '.target sm_$arch' in it)"
      printf '+ probe embeds .target sm_%s\n' "$arch" >>"$log"
    fi
  fi
  if [[ $run == 1 ]]; then
    run_logged "$log" timeout 300 "$pdir/build/probe"
    grep -q '^probe OK' "$log" || die "$name probe did not report OK (see $log)"
    PROBE_RESULT="compiled, linked and ran OK"
  else
    PROBE_RESULT="compiled and linked (not run: no GPU here)"
  fi
  rm -rf "$pdir"
}

# -------------------------------------------------------- Kokkos builds ----
kokkos_cmake_ok() {
  compgen -G "$1/lib*/cmake/Kokkos/KokkosConfig.cmake" >/dev/null ||
    compgen -G "$1/lib/*/cmake/Kokkos/KokkosConfig.cmake" >/dev/null
}
kokkos_has_cuda() {
  local h
  h=$(find "$1/include" -maxdepth 2 -name KokkosCore_config.h 2>/dev/null | head -n 1)
  [[ -n $h ]] && grep -q '^#define KOKKOS_ENABLE_CUDA *$' "$h"
}
stamp_ok() { [[ -f $1/.flashcore-build-key && $(cat "$1/.flashcore-build-key") == "$2" ]]; }

# build_kokkos NAME PREFIX KEY CXX RUN_PROBE ARCH -- CMAKE_ARGS...  (env: KENV)
KENV=()
build_kokkos() {
  local name=$1 prefix=$2 key=$3 cxx=$4 run=$5 arch=$6; shift 7
  local bdir=$CACHE/build/$name log=$CACHE/logs/$name.log
  ensure_kokkos_src
  rm -rf "$bdir" "$prefix"
  : >"$log"
  say "building Kokkos $KOKKOS_VERSION ($name) -> $prefix (log: $log)"
  run_logged "$log" env "${KENV[@]}" cmake -S "$SRC_DIR" -B "$bdir" -G Ninja \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib "$@"
  run_logged "$log" env "${KENV[@]}" cmake --build "$bdir" -j "$JOBS"
  run_logged "$log" env "${KENV[@]}" cmake --install "$bdir"
  PROBE_RESULT=""
  if [[ $name == *-cuda-* ]]; then postinstall_nvcc_wrapper "$prefix"; cxx=$prefix/bin/nvcc_wrapper; fi
  probe_kokkos "$name" "$prefix" "$cxx" "$run" "$log" "$arch"
  printf '%s\n' "$key" >"$prefix/.flashcore-build-key"
  rm -rf "$bdir"
}

# The installed nvcc_wrapper finds nvcc in PATH (or $CUDA_ROOT/bin); let it
# fall back to the toolkit this install was built with.
postinstall_nvcc_wrapper() {
  local w=$1/bin/nvcc_wrapper
  [[ -f $w ]] || die "no nvcc_wrapper in $1/bin"
  if grep -qx 'nvcc_compiler=nvcc' "$w"; then
    awk -v cuda="$CUDA_DIR" '{ print }
      $0 == "nvcc_compiler=nvcc" {
        printf "# Added by FlashCore scripts/setup.sh: fall back to the toolkit Kokkos was built with.\n"
        printf "if ! command -v nvcc >/dev/null 2>&1 && [ -x \"%s/bin/nvcc\" ]; then nvcc_compiler=\"%s/bin/nvcc\"; fi\n", cuda, cuda
      }' "$w" >"$w.tmp"
    cat "$w.tmp" >"$w" && rm -f "$w.tmp"
  fi
}

HOST_CXX=${FLASHCORE_HOST_CXX:-g++}
host_cmake_args() {
  printf '%s\n' -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$(command -v "$HOST_CXX")" \
    -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF \
    -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON \
    -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF -DKokkos_ENABLE_HWLOC=OFF
}

KOKKOS_HOST=""
KOKKOS_CUDA=""
KOKKOS5_INCLUDE=""
USER_KOKKOS=${FLASHCORE_KOKKOS_ROOT:-${Kokkos_ROOT:-}}
USER_KOKKOS_CUDA=${FLASHCORE_KOKKOS_CUDA_ROOT:-}
if [[ -n $USER_KOKKOS ]]; then
  kokkos_cmake_ok "$USER_KOKKOS" ||
    die "Kokkos_ROOT/FLASHCORE_KOKKOS_ROOT=$USER_KOKKOS has no lib*/cmake/Kokkos/KokkosConfig.cmake"
  if kokkos_has_cuda "$USER_KOKKOS"; then
    [[ -n $USER_KOKKOS_CUDA ]] || USER_KOKKOS_CUDA=$USER_KOKKOS
    USER_KOKKOS=""
  fi
fi
if [[ -n $USER_KOKKOS_CUDA ]]; then
  kokkos_cmake_ok "$USER_KOKKOS_CUDA" ||
    die "FLASHCORE_KOKKOS_CUDA_ROOT=$USER_KOKKOS_CUDA has no lib*/cmake/Kokkos/KokkosConfig.cmake"
  kokkos_has_cuda "$USER_KOKKOS_CUDA" || die "$USER_KOKKOS_CUDA is not a CUDA-enabled Kokkos"
fi

ensure_kokkos_host() {  # for the selected Kokkos; sets KOKKOS_HOST
  step_begin "kokkos $KOKKOS_VERSION host (Serial+OpenMP)"
  if [[ -n $USER_KOKKOS && -z $PREFIX_TAG ]]; then
    KOKKOS_HOST=$USER_KOKKOS
    step_end "user-provided: $KOKKOS_HOST"
    return
  fi
  command -v "$HOST_CXX" >/dev/null 2>&1 || die "host compiler $HOST_CXX not found"
  local prefix=$CACHE/kokkos$PREFIX_TAG-host key
  local -a args
  mapfile -t args < <(host_cmake_args)
  key=$( {
    echo "rev=$SETUP_REV kokkos=$KOKKOS_VERSION patches=$PATCH_HASH"
    printf '%s\n' "${args[@]}"
    "$HOST_CXX" --version | head -n 1
    cmake --version | head -n 1
  } | sha)
  if stamp_ok "$prefix" "$key"; then
    KOKKOS_HOST=$prefix
    step_end "cached ($prefix)"
    return
  fi
  KENV=()
  build_kokkos "kokkos$PREFIX_TAG-host" "$prefix" "$key" "$(command -v "$HOST_CXX")" 1 "" -- "${args[@]}"
  KOKKOS_HOST=$prefix
  step_end "built; probe $PROBE_RESULT"
}

# ---- CUDA
CUDA_DIR=""
find_cuda() {
  local nvcc=""
  if [[ -n ${CUDA_HOME:-} && -x ${CUDA_HOME}/bin/nvcc ]]; then nvcc=$CUDA_HOME/bin/nvcc
  elif [[ -n ${CUDA_PATH:-} && -x ${CUDA_PATH}/bin/nvcc ]]; then nvcc=$CUDA_PATH/bin/nvcc
  elif command -v nvcc >/dev/null 2>&1; then nvcc=$(command -v nvcc)
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then nvcc=/usr/local/cuda/bin/nvcc
  fi
  [[ -n $nvcc ]] || return 1
  CUDA_DIR=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd -P)
}

cuda_arch() {
  local a=${FLASHCORE_CUDA_ARCH:-}
  if [[ -z $a ]]; then
    if command -v nvidia-smi >/dev/null 2>&1; then
      a=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .' || true)
    fi
    if [[ -z $a ]]; then a=90; fi
    if [[ $a != 89 && $a != 90 ]]; then
      die "local GPU has compute capability $a; only 89 and 90 are supported: set FLASHCORE_CUDA_ARCH=89 or 90"
    fi
  fi
  a=${a#sm_}
  a=${a//./}
  [[ $a == 89 || $a == 90 ]] || die "FLASHCORE_CUDA_ARCH=$FLASHCORE_CUDA_ARCH: must be 89 or 90"
  echo "$a"
}

CUDA_ARCH=""
CUDA_PREFIX=""
CUDA_KEY=""
CUDA_ARGS=()
cuda_config() {  # sets CUDA_ARCH CUDA_PREFIX CUDA_KEY CUDA_ARGS; 1: no toolkit, 2: bad arch
  find_cuda || return 1
  CUDA_ARCH=$(cuda_arch) || return 2
  local flag=""
  case $CUDA_ARCH in 89) flag=ADA89 ;; 90) flag=HOPPER90 ;; esac
  CUDA_PREFIX=$CACHE/kokkos$PREFIX_TAG-cuda-sm$CUDA_ARCH
  CUDA_ARGS=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$SRC_DIR/bin/nvcc_wrapper"
    -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF
    -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON
    -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_CUDA=ON
    -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ENABLE_CUDA_CONSTEXPR=ON
    "-DKokkos_ARCH_$flag=ON" -DCUDAToolkit_ROOT="$CUDA_DIR"
    -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF -DKokkos_ENABLE_HWLOC=OFF)
  CUDA_KEY=$( {
    echo "rev=$SETUP_REV kokkos=$KOKKOS_VERSION patches=$PATCH_HASH cuda=$CUDA_DIR"
    printf '%s\n' "${CUDA_ARGS[@]}"
    "$HOST_CXX" --version | head -n 1
    "$CUDA_DIR/bin/nvcc" --version | tail -n 2
    cmake --version | head -n 1
  } | sha)
}

ensure_kokkos_cuda() {  # for the selected Kokkos; sets KOKKOS_CUDA
  step_begin "kokkos $KOKKOS_VERSION cuda (CUDA+OpenMP+Serial)"
  if [[ -n $USER_KOKKOS_CUDA && -z $PREFIX_TAG ]]; then
    KOKKOS_CUDA=$USER_KOKKOS_CUDA
    step_end "user-provided: $KOKKOS_CUDA"
    return
  fi
  local rc=0
  cuda_config || rc=$?
  [[ $rc -ne 2 ]] || exit 1  # bad arch: cuda_arch said why
  [[ $rc -eq 0 ]] || die "--cuda: no CUDA toolkit found (looked at CUDA_HOME, CUDA_PATH, nvcc in PATH, /usr/local/cuda); Debian does not provide CUDA 12/13, install the NVIDIA toolkit"
  if stamp_ok "$CUDA_PREFIX" "$CUDA_KEY"; then
    KOKKOS_CUDA=$CUDA_PREFIX
    step_end "cached ($CUDA_PREFIX)"
    return
  fi
  local run=0
  if have_gpu; then run=1; fi
  KENV=("PATH=$CUDA_DIR/bin:$PATH" "CUDA_ROOT=$CUDA_DIR" "NVCC_WRAPPER_DEFAULT_COMPILER=$(command -v "$HOST_CXX")")
  build_kokkos "kokkos$PREFIX_TAG-cuda-sm$CUDA_ARCH" "$CUDA_PREFIX" "$CUDA_KEY" "" "$run" "$CUDA_ARCH" -- "${CUDA_ARGS[@]}"
  grep -q "^#define KOKKOS_ARCH_$( [[ $CUDA_ARCH == 89 ]] && echo ADA89 || echo HOPPER90)" \
    "$CUDA_PREFIX/include/KokkosCore_config.h" || die "installed KokkosCore_config.h lacks the sm_$CUDA_ARCH arch macro"
  KOKKOS_CUDA=$CUDA_PREFIX
  step_end "built sm_$CUDA_ARCH; probe $PROBE_RESULT"
}

# Without --cuda, still report a CUDA install that is complete and current.
report_existing_cuda() {
  if [[ -n $USER_KOKKOS_CUDA && -z $PREFIX_TAG ]]; then KOKKOS_CUDA=$USER_KOKKOS_CUDA; return; fi
  if cuda_config 2>/dev/null && stamp_ok "$CUDA_PREFIX" "$CUDA_KEY"; then KOKKOS_CUDA=$CUDA_PREFIX; fi
}

# ------------------------------------------------------------- Kokkos 4.x --
# The compatibility Kokkos: built from a source tarball (CI: ../shared/deps), never needed by the
# README's two commands on a user's machine.
KOKKOS4_HOST=""
KOKKOS4_CUDA=""
kokkos4_tarball() {
  local t=${FLASHCORE_KOKKOS4_TARBALL:-}
  if [[ -z $t ]]; then
    t=$(find "$REPO_ROOT/../shared/deps" -maxdepth 1 -name 'kokkos-4.*.tar.gz' 2>/dev/null | LC_ALL=C sort | tail -n 1)
  fi
  [[ -n $t && -f $t ]] && (cd "$(dirname "$t")" && printf '%s/%s\n' "$(pwd -P)" "$(basename "$t")")
}

ensure_kokkos4() {
  local tarball ver host=$KOKKOS_HOST cuda=$KOKKOS_CUDA
  tarball=$(kokkos4_tarball) || true
  if [[ -z $tarball ]]; then
    note "--kokkos4: no Kokkos 4 tarball (FLASHCORE_KOKKOS4_TARBALL, or ../shared/deps/kokkos-4.*.tar.gz); skipping Kokkos 4"
    return
  fi
  ver=$(basename "$tarball" .tar.gz)
  ver=${ver#kokkos-}
  select_kokkos "$ver" "$tarball"
  ensure_kokkos_host
  KOKKOS4_HOST=$KOKKOS_HOST
  if [[ $WANT_CUDA == 1 ]]; then ensure_kokkos_cuda; KOKKOS4_CUDA=$KOKKOS_CUDA; else
    KOKKOS_CUDA=""; report_existing_cuda; KOKKOS4_CUDA=$KOKKOS_CUDA; fi
  KOKKOS_HOST=$host KOKKOS_CUDA=$cuda
  select_kokkos "$DEFAULT_KOKKOS_VERSION"
}

# ------------------------------------------------------- Kokkos 5 headers --
K5_DIR=$CACHE/kokkos5
K5_NOTE=""
kokkos5_fetch() {  # returns 1 (with K5_NOTE) on any failure; never exits
  local log=$CACHE/logs/kokkos5.log adir=$CACHE/apt/sid deps debs root inc f
  : >"$log"
  apt_private "$adir" "deb $MIRROR sid main"
  if ! apt-get -q "${APT_OPTS[@]}" update >>"$log" 2>&1 </dev/null; then
    K5_NOTE="apt-get update of a private 'deb $MIRROR sid main' list failed (see $log)"; return 1
  fi
  deps=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions libkokkos-dev 2>>"$log" |
    sed -n 's/^Depends: //p' | tr ',' '\n' | sed 's/[(|].*//; s/ //g' | grep '^libkokkos' | paste -sd' ' || true)
  if [[ -z $deps ]]; then
    K5_NOTE="sid has no libkokkos-dev with a libkokkos* dependency (see $log)"; return 1
  fi
  debs=$K5_DIR/debs
  rm -rf "$debs" && mkdir -p "$debs"
  # shellcheck disable=SC2086
  if ! (cd "$debs" && apt-get -q "${APT_OPTS[@]}" download libkokkos-dev $deps) >>"$log" 2>&1 </dev/null; then
    K5_NOTE="apt-get download libkokkos-dev $deps from sid failed (see $log)"; return 1
  fi
  root=$K5_DIR/root
  rm -rf "$root.tmp" && mkdir -p "$root.tmp"
  for f in "$debs"/*.deb; do
    if ! dpkg-deb -x "$f" "$root.tmp" >>"$log" 2>&1; then
      K5_NOTE="dpkg-deb -x $f failed (see $log)"; return 1
    fi
  done
  rm -rf "$root" && mv "$root.tmp" "$root"
  inc=$root/usr/include/kokkos
  if [[ ! -f $inc/Kokkos_Core.hpp || ! -f $inc/KokkosCore_config.h ]]; then
    K5_NOTE="extracted packages lack usr/include/kokkos/Kokkos_Core.hpp or KokkosCore_config.h"; return 1
  fi
  ls "$debs" >"$K5_DIR/PACKAGES"
  rm -rf "$debs" "$adir"
  return 0
}

kokkos5_check() {  # syntax check of the probe; writes $K5_DIR/CHECK
  local inc=$K5_DIR/root/usr/include/kokkos log=$CACHE/logs/kokkos5.log pdir=$CACHE/build/probe-kokkos5 ver std17
  rm -rf "$pdir"
  write_probe_sources "$pdir"
  ver=$(sed -n 's/^#define KOKKOS_VERSION \([0-9]*\)$/\1/p' "$inc/KokkosCore_config.h")
  printf '+ g++ -std=c++20 -fopenmp -fsyntax-only -I%s probe.cpp\n' "$inc" >>"$log"
  if ! "$HOST_CXX" -std=c++20 -fopenmp -fsyntax-only -I"$inc" "$pdir/probe.cpp" >>"$log" 2>&1; then
    K5_NOTE="probe does not compile (-fsyntax-only, C++20) against Kokkos $ver headers (see $log)"
    rm -rf "$pdir"
    return 1
  fi
  if "$HOST_CXX" -std=c++17 -fopenmp -fsyntax-only -I"$inc" "$pdir/probe.cpp" >/dev/null 2>&1; then
    std17="also compiles as C++17"
  else
    std17="needs C++20 (C++17 fails)"
  fi
  rm -rf "$pdir"
  printf 'Kokkos %s.%s.%s headers: probe OK with %s -std=c++20 -fopenmp -fsyntax-only; %s\n' \
    $((ver / 10000)) $((ver / 100 % 100)) $((ver % 100)) "$HOST_CXX" "$std17" >"$K5_DIR/CHECK"
}

ensure_kokkos5() {
  step_begin "kokkos 5 headers (sid, syntax only)"
  local inc=$K5_DIR/root/usr/include/kokkos
  if [[ $WANT_K5 == 0 ]]; then
    step_end "skipped"
    return
  fi
  if [[ -f $K5_DIR/.flashcore-ok && -f $inc/Kokkos_Core.hpp ]]; then
    KOKKOS5_INCLUDE=$inc
    step_end "cached: $(cat "$K5_DIR/CHECK" 2>/dev/null)"
    return
  fi
  rm -f "$K5_DIR/.flashcore-ok"
  mkdir -p "$K5_DIR"
  if kokkos5_fetch && kokkos5_check; then
    touch "$K5_DIR/.flashcore-ok"
    KOKKOS5_INCLUDE=$inc
    step_end "$(cat "$K5_DIR/CHECK")"
  else
    note "Kokkos 5 headers unavailable, continuing without them: $K5_NOTE"
    step_end "FAILED (optional): $K5_NOTE"
  fi
}

# ------------------------------------------------------------------ main ---
ensure_packages
ensure_kokkos_host
if [[ $WANT_CUDA == 1 ]]; then ensure_kokkos_cuda; else report_existing_cuda; fi
if [[ $WANT_K4 == 1 ]]; then ensure_kokkos4; fi
ensure_kokkos5

ENV_SH=$CACHE/env.sh
{
  echo "# Written by scripts/setup.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ); source it or read the assignments."
  printf 'FLASHCORE_KOKKOS_HOST=%q\n' "$KOKKOS_HOST"
  printf 'FLASHCORE_KOKKOS_CUDA=%q\n' "$KOKKOS_CUDA"
  printf 'FLASHCORE_KOKKOS4_HOST=%q\n' "$KOKKOS4_HOST"
  printf 'FLASHCORE_KOKKOS4_CUDA=%q\n' "$KOKKOS4_CUDA"
  printf 'FLASHCORE_KOKKOS5_INCLUDE=%q\n' "$KOKKOS5_INCLUDE"
  echo 'export FLASHCORE_KOKKOS_HOST FLASHCORE_KOKKOS_CUDA FLASHCORE_KOKKOS4_HOST FLASHCORE_KOKKOS4_CUDA FLASHCORE_KOKKOS5_INCLUDE'
} >"$ENV_SH.tmp.$$"
mv "$ENV_SH.tmp.$$" "$ENV_SH"

if [[ $QUIET == 0 ]]; then
  say "timings:"
  for t in "${TIMINGS[@]}"; do printf '[setup]   %s\n' "$t"; done
  say "total: $(secs_since "$T_START")s; wrote $ENV_SH:"
fi
printf 'FLASHCORE_KOKKOS_HOST=%q\n' "$KOKKOS_HOST"
printf 'FLASHCORE_KOKKOS_CUDA=%q\n' "$KOKKOS_CUDA"
printf 'FLASHCORE_KOKKOS4_HOST=%q\n' "$KOKKOS4_HOST"
printf 'FLASHCORE_KOKKOS4_CUDA=%q\n' "$KOKKOS4_CUDA"
printf 'FLASHCORE_KOKKOS5_INCLUDE=%q\n' "$KOKKOS5_INCLUDE"
