#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then configures, builds and runs
# examples/embed_minimal against it with find_package(Strata); it exits non-zero unless the
# loss falls, the memory budget holds and the checkpoint it saves loads back the same model; then
# compiles tests/package/old_io_header_paths.cpp (the io headers' former paths) against the same tree.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$source_dir/examples/embed_minimal" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# The installed library must not need the build tree.
LD_LIBRARY_PATH="$work/prefix/lib" "$work/build/embed_minimal"
# An application that includes the io headers by their former paths compiles against the installed tree.
"${CXX:-c++}" -std=c++20 -fsyntax-only -I"$work/prefix/include" "$source_dir/tests/package/old_io_header_paths.cpp"
