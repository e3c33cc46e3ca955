#!/usr/bin/env bash
# Fails if a public header includes a CUDA, MPI, protobuf or liburing header.
set -u
bad=$(grep -rnE '#\s*include\s*[<"](cuda|cublas|cudnn|nccl|cufile|mpi|google/protobuf|liburing)[^>"]*[>"]' "$@" || true)
if [ -n "$bad" ]; then
  echo "public headers include private dependencies:"
  echo "$bad"
  exit 1
fi
echo "public headers are clean ($(find "$@" -name '*.h' | wc -l) headers)"
