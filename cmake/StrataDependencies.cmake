# Finds Strata's dependencies; ON options fail loudly when something is missing.
include(CheckLanguage)

function(strata_resolve_option name found)
  if(${name} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "${name}=ON but the dependency was not found")
  endif()
endfunction()

find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)

# OpenBLAS, the OpenMP build (mixing the pthreads build with OpenMP cuts GEMM speed: idle OpenMP threads spin).
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/aarch64-linux-gnu/openblas-openmp
        /usr/include/openblas /usr/include NO_DEFAULT_PATH)
find_library(OPENBLAS_LIBRARY NAMES openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
  NO_DEFAULT_PATH)
if(NOT OPENBLAS_LIBRARY)
  find_library(OPENBLAS_LIBRARY NAMES openblas)
endif()
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: apt-get install libopenblas-openmp-dev (tools/setup.sh)")
endif()
add_library(strata_openblas INTERFACE)
target_include_directories(strata_openblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(strata_openblas INTERFACE ${OPENBLAS_LIBRARY})

# oneDNN: GEMM kernels chosen by CPU feature flags (OpenBLAS picks its kernels by CPU model
# and falls back to SSE3 kernels on CPUs it does not know, e.g. some virtualized Xeons).
set(STRATA_WITH_DNNL AUTO CACHE STRING "Use oneDNN for CPU GEMM: ON, OFF or AUTO")
set(STRATA_HAVE_DNNL OFF)
if(NOT STRATA_WITH_DNNL STREQUAL "OFF")
  find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
  find_library(DNNL_LIBRARY dnnl)
  if(DNNL_INCLUDE_DIR AND DNNL_LIBRARY)
    set(STRATA_HAVE_DNNL ON)
    add_library(strata_dnnl INTERFACE)
    target_include_directories(strata_dnnl SYSTEM INTERFACE ${DNNL_INCLUDE_DIR})
    target_link_libraries(strata_dnnl INTERFACE ${DNNL_LIBRARY})
  endif()
  strata_resolve_option(STRATA_WITH_DNNL STRATA_HAVE_DNNL)
endif()

find_package(PkgConfig)
set(STRATA_HAVE_URING OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(URING IMPORTED_TARGET liburing)
  if(URING_FOUND)
    set(STRATA_HAVE_URING ON)
  endif()
endif()

find_package(Protobuf REQUIRED)  # checkpoint index (io/checkpoint/checkpoint.proto); tools/setup.sh installs it
find_package(nlohmann_json 3 REQUIRED)
find_package(PNG REQUIRED)   # io/images: folders of PNG images (libpng-dev)
find_package(JPEG REQUIRED)  # io/images: folders of JPEG images (libjpeg-dev, libjpeg-turbo)
find_package(ZLIB REQUIRED)  # io/graphs: gzip'd graph files (zlib1g-dev, which libpng-dev needs anyway)

# MPI
set(STRATA_HAVE_MPI OFF)
if(NOT STRATA_WITH_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(STRATA_HAVE_MPI ON)
  endif()
  strata_resolve_option(STRATA_WITH_MPI STRATA_HAVE_MPI)
endif()

# CUDA
set(STRATA_HAVE_CUDA OFF)
if(NOT STRATA_WITH_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS "$ENV{CUDA_HOME}/bin/nvcc")
    set(CMAKE_CUDA_COMPILER "$ENV{CUDA_HOME}/bin/nvcc")
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES ${STRATA_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(STRATA_HAVE_CUDA ON)
  endif()
  strata_resolve_option(STRATA_WITH_CUDA STRATA_HAVE_CUDA)
endif()

# GPUDirect Storage (cuFile), only with CUDA.
set(STRATA_HAVE_GDS OFF)
if(STRATA_HAVE_CUDA AND NOT STRATA_WITH_GDS STREQUAL "OFF")
  find_path(CUFILE_INCLUDE_DIR cufile.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDA_HOME}/include)
  find_library(CUFILE_LIBRARY cufile HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{CUDA_HOME}/lib64)
  if(CUFILE_INCLUDE_DIR AND CUFILE_LIBRARY)
    set(STRATA_HAVE_GDS ON)
  endif()
endif()
if(NOT STRATA_WITH_GDS STREQUAL "OFF")
  strata_resolve_option(STRATA_WITH_GDS STRATA_HAVE_GDS)
endif()

# cuDNN: convolution, batchnorm and pooling on CUDA tensors (CI forces CUDA on, so it must be there).
set(STRATA_HAVE_CUDNN OFF)
if(STRATA_HAVE_CUDA)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDA_HOME}/include)
  find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{CUDA_HOME}/lib64 $ENV{CUDA_HOME}/lib)
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    set(STRATA_HAVE_CUDNN ON)
  elseif(STRATA_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "STRATA_WITH_CUDA=ON but cuDNN (cudnn.h, libcudnn) was not found")
  endif()
endif()

# cuDNN's header-only frontend (tools/setup.sh puts it in third_party/cudnn_frontend): cuDNN's
# fused attention for 16-bit tensors. Optional: without it that attention runs Strata's own kernels.
set(STRATA_HAVE_CUDNN_FRONTEND OFF)
if(STRATA_HAVE_CUDNN)
  find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
            HINTS ${PROJECT_SOURCE_DIR}/third_party/cudnn_frontend/include $ENV{CUDNN_FRONTEND_PATH}/include)
  if(CUDNN_FRONTEND_INCLUDE_DIR)
    set(STRATA_HAVE_CUDNN_FRONTEND ON)
  endif()
endif()

# NCCL: data-parallel collectives on CUDA tensors, bootstrapped over MPI (so it needs both).
set(STRATA_HAVE_NCCL OFF)
if(STRATA_HAVE_CUDA AND STRATA_HAVE_MPI)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDA_HOME}/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{CUDA_HOME}/lib $ENV{CUDA_HOME}/lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(STRATA_HAVE_NCCL ON)
  elseif(STRATA_WITH_CUDA STREQUAL "ON" AND STRATA_WITH_MPI STREQUAL "ON")
    message(FATAL_ERROR "STRATA_WITH_CUDA=ON and STRATA_WITH_MPI=ON but NCCL (nccl.h, libnccl) was not found")
  endif()
endif()
