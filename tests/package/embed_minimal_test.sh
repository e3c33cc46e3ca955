#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then configures, builds and runs
# examples/embed_minimal against it with find_package(Strata): the shared library with every
# dependency but OpenMP and Threads hidden, the static one with them (hidden, it must fail); it
# exits non-zero unless the
# loss falls, the memory budget holds and the checkpoint it saves loads back the same model; then
# compiles tests/package/old_io_header_paths.cpp (the io headers' former paths) against the same tree.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
# The shared library asks for what its interface needs, nothing more: the consumer configures
# with every other dependency of the build hidden from find_package.
hidden=()
for pkg in Protobuf PNG JPEG ZLIB CUDAToolkit MPI PkgConfig Eigen3 CLI11 GTest; do
  hidden+=("-DCMAKE_DISABLE_FIND_PACKAGE_$pkg=TRUE")
done
cmake -S "$source_dir/examples/embed_minimal" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release "${hidden[@]}" > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
# The static library keeps the full list: hidden, they fail its configure by name ...
if cmake -S "$source_dir/examples/embed_minimal" -B "$work/static_hidden" -G Ninja -DEMBED_MINIMAL_STATIC=ON \
  -DCMAKE_PREFIX_PATH="$work/prefix" "${hidden[@]}" > "$work/static_hidden.log" 2>&1; then
  echo "FAIL: the static library configured without its dependencies"; exit 1
fi
grep -q "Protobuf" "$work/static_hidden.log" || { cat "$work/static_hidden.log"; exit 1; }
# ... and found, it links and runs.
cmake -S "$source_dir/examples/embed_minimal" -B "$work/static" -G Ninja -DEMBED_MINIMAL_STATIC=ON \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/static.log" ||
  { cat "$work/static.log"; exit 1; }
cmake --build "$work/static" > "$work/static_build.log" || { cat "$work/static_build.log"; exit 1; }
"$work/static/embed_minimal" > "$work/static_run.log" || { cat "$work/static_run.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# The installed library must not need the build tree.
LD_LIBRARY_PATH="$work/prefix/lib" "$work/build/embed_minimal"
# An application that includes the io headers by their former paths compiles against the installed tree.
"${CXX:-c++}" -std=c++20 -fsyntax-only -I"$work/prefix/include" "$source_dir/tests/package/old_io_header_paths.cpp"
