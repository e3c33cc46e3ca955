# One OBJECT library per layer in the build order of docs/design.md, combined into one shared
# and one static `strata` (nothing compiles twice). A layer's public headers live in
# <folder>/include/strata/...; each layer compiles with its own include directories and those
# of the layers below it only, so a header of a higher layer is not found (tests/layers checks
# both this and the private "<folder>/..." includes).
configure_file(${PROJECT_SOURCE_DIR}/cmake/config.h.in
               ${PROJECT_BINARY_DIR}/include/strata/config.h @ONLY)

# What every layer compiles against: config.h, the private include root ("ops/dispatch.h"),
# the third-party libraries the kernels use.
add_library(strata_build_settings INTERFACE)
target_include_directories(strata_build_settings INTERFACE
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
target_link_libraries(strata_build_settings INTERFACE OpenMP::OpenMP_CXX Threads::Threads
                      Eigen3::Eigen strata_openblas $<$<BOOL:${STRATA_HAVE_DNNL}>:strata_dnnl>)

set(STRATA_LAYERS "")
set(STRATA_LAYER_NAMES "")
set(STRATA_PUBLIC_INCLUDE_DIRS "")
# strata_layer(NAME SOURCES dir... [INCLUDES dir...] [USES layer...]): an OBJECT library
# strata_NAME from the .cpp files of the SOURCES folders, compiled with the INCLUDES folders
# (its public headers) and the include folders of the USES layers (and theirs, recursively).
# Sets STRATA_LAYER_<NAME>_INCLUDES (absolute: what the layer sees), _OWN_INCLUDES and _SOURCES
# (relative to the source root), which tests/package checks the layering with.
function(strata_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;INCLUDES;USES")
  set(includes "")
  foreach(dir ${arg_INCLUDES})
    list(APPEND includes ${PROJECT_SOURCE_DIR}/${dir})
  endforeach()
  set(public ${STRATA_PUBLIC_INCLUDE_DIRS} ${includes})
  foreach(below ${arg_USES})
    if(NOT DEFINED STRATA_LAYER_${below}_INCLUDES)
      message(FATAL_ERROR "strata_layer(${name}): layer '${below}' is not defined before it")
    endif()
    list(APPEND includes ${STRATA_LAYER_${below}_INCLUDES})
  endforeach()
  list(REMOVE_DUPLICATES includes)
  set(STRATA_LAYER_${name}_INCLUDES ${includes} PARENT_SCOPE)
  set(STRATA_LAYER_${name}_SOURCES ${arg_SOURCES} PARENT_SCOPE)
  set(STRATA_LAYER_${name}_OWN_INCLUDES ${arg_INCLUDES} PARENT_SCOPE)
  set(STRATA_PUBLIC_INCLUDE_DIRS ${public} PARENT_SCOPE)
  set(STRATA_LAYER_NAMES ${STRATA_LAYER_NAMES} ${name} PARENT_SCOPE)
  set(srcs "")
  foreach(dir ${arg_SOURCES})
    file(GLOB layer_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND srcs ${layer_srcs})
  endforeach()
  if(NOT srcs)
    return()
  endif()
  add_library(strata_${name} OBJECT ${srcs})
  target_link_libraries(strata_${name} PUBLIC strata_build_settings)
  target_include_directories(strata_${name} PUBLIC ${includes})
  set(STRATA_LAYERS ${STRATA_LAYERS} strata_${name} PARENT_SCOPE)
endfunction()

strata_layer(tensor SOURCES core/tensor INCLUDES core/tensor/include)
strata_layer(autograd SOURCES core/autograd INCLUDES core/autograd/include USES tensor)
strata_layer(nn SOURCES core/nn core/optim core/dist
             INCLUDES core/nn/include core/optim/include core/dist/include USES autograd)
strata_layer(ops SOURCES ops ops/cpu ops/meta ops/sim ops/graph INCLUDES ops/include USES nn)
# core/dist: MPI and NCCL process groups (their headers stay out of the public ones).
if(TARGET strata_nn AND STRATA_HAVE_MPI)
  target_include_directories(strata_nn SYSTEM PRIVATE ${MPI_CXX_INCLUDE_DIRS})
  target_compile_definitions(strata_nn PRIVATE ${MPI_CXX_COMPILE_DEFINITIONS})
endif()
if(TARGET strata_nn AND STRATA_HAVE_NCCL)
  target_include_directories(strata_nn SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS} ${NCCL_INCLUDE_DIR})
endif()
strata_layer(memory SOURCES memory memory/tiers memory/planner memory/model_state INCLUDES memory/include USES ops)
strata_layer(models SOURCES models models/layers models/layers/graph models/gpt models/bert models/resnet models/gnn
             INCLUDES models/include USES memory)
strata_layer(io SOURCES io io/text io/weights io/checkpoint io/images io/graphs io/features io/report INCLUDES io/include USES memory)
if(TARGET strata_memory AND STRATA_HAVE_URING)
  target_link_libraries(strata_memory PRIVATE PkgConfig::URING)
endif()
# strata_layer_protos(LAYER DIR): DIR/*.proto -> <build>/proto/DIR/*.pb.{h,cc}, compiled into
# strata_LAYER and included as "DIR/<name>.pb.h" by that layer's sources only (public headers
# never see protobuf).
function(strata_layer_protos layer dir)
  file(GLOB protos CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.proto)
  set(proto_out ${PROJECT_BINARY_DIR}/proto)
  file(MAKE_DIRECTORY ${proto_out}/${dir})
  foreach(proto ${protos})
    get_filename_component(proto_name ${proto} NAME_WE)
    set(proto_srcs ${proto_out}/${dir}/${proto_name}.pb.h ${proto_out}/${dir}/${proto_name}.pb.cc)
    add_custom_command(
      OUTPUT ${proto_srcs}
      COMMAND protobuf::protoc --cpp_out=${proto_out} -I ${PROJECT_SOURCE_DIR} ${proto}
      DEPENDS ${proto} protobuf::protoc
      COMMENT "protoc ${dir}/${proto_name}.proto"
      VERBATIM)
    target_sources(strata_${layer} PRIVATE ${proto_srcs})
  endforeach()
  target_include_directories(strata_${layer} SYSTEM PRIVATE ${proto_out})
  target_link_libraries(strata_${layer} PRIVATE protobuf::libprotobuf)
endfunction()
if(TARGET strata_memory)
  strata_layer_protos(memory memory)  # the cache's plans
  strata_layer_protos(memory memory/planner)  # hardware profiles, step traces
endif()
# ICU's common library (libicu-dev): Unicode categories, White_Space, NFD and lower-casing for
# io/text's BERT tokenizer. Linked by its path, as OpenBLAS, so that the exported static library
# names no imported target a consumer would have to find.
find_path(STRATA_ICU_INCLUDE_DIR unicode/uchar.h)
find_library(STRATA_ICU_UC_LIBRARY icuuc)
if(NOT STRATA_ICU_INCLUDE_DIR OR NOT STRATA_ICU_UC_LIBRARY)
  message(FATAL_ERROR "ICU not found: apt-get install libicu-dev (tools/setup.sh)")
endif()
if(TARGET strata_io)
  target_link_libraries(strata_io PRIVATE nlohmann_json::nlohmann_json PNG::PNG JPEG::JPEG ZLIB::ZLIB)
  target_include_directories(strata_io SYSTEM PRIVATE ${STRATA_ICU_INCLUDE_DIR})
  strata_layer_protos(io io/checkpoint)  # the checkpoint index
  strata_layer_protos(io io/report)  # TensorBoard event records
endif()

if(STRATA_HAVE_CUDA)
  file(GLOB cuda_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/cuda/*.cu
       ${PROJECT_SOURCE_DIR}/ops/cuda/*.cpp)
  if(NOT cuda_srcs)
    message(FATAL_ERROR "CUDA is on but ops/cuda has no sources")
  endif()
  add_library(strata_cuda OBJECT ${cuda_srcs})  # the ops layer's CUDA backend
  target_link_libraries(strata_cuda PUBLIC strata_build_settings CUDA::cudart CUDA::cublasLt
                        CUDA::cublas)
  target_include_directories(strata_cuda PUBLIC ${STRATA_LAYER_ops_INCLUDES})
  target_compile_options(strata_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-fPIC>)
  set_target_properties(strata_cuda PROPERTIES CUDA_ARCHITECTURES "${STRATA_CUDA_ARCHITECTURES}")
  # The same list in the code, so that a device it holds no code for is refused by name.
  string(REPLACE ";" "," strata_cuda_archs "${STRATA_CUDA_ARCHITECTURES}")
  target_compile_definitions(strata_cuda PRIVATE STRATA_CUDA_ARCHS="${strata_cuda_archs}")
  target_include_directories(strata_cuda PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  if(STRATA_HAVE_CUDNN)
    target_include_directories(strata_cuda SYSTEM PRIVATE ${CUDNN_INCLUDE_DIR})
  endif()
  if(STRATA_HAVE_CUDNN_FRONTEND)
    target_include_directories(strata_cuda SYSTEM PRIVATE ${CUDNN_FRONTEND_INCLUDE_DIR})
    target_compile_definitions(strata_cuda PRIVATE STRATA_HAVE_CUDNN_FRONTEND=1)
  endif()
  # CMake < 3.26 knows no C++20 dialect for nvcc (CUDA_STANDARD 20 fails to generate): pass
  # the flag by hand instead (nvcc rejects a second -std, so the property must be unset).
  if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
    set_property(TARGET strata_cuda PROPERTY CUDA_STANDARD)
    set_property(TARGET strata_cuda PROPERTY CUDA_STANDARD_REQUIRED OFF)
    target_compile_options(strata_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>)
  endif()
  list(APPEND STRATA_LAYERS strata_cuda)
endif()

set(strata_objects "")
foreach(layer ${STRATA_LAYERS})
  list(APPEND strata_objects $<TARGET_OBJECTS:${layer}>)
endforeach()

foreach(kind SHARED STATIC)
  if(kind STREQUAL "SHARED")
    set(tgt strata)
  else()
    set(tgt strata_static)
  endif()
  add_library(${tgt} ${kind} ${strata_objects})
  target_include_directories(${tgt} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    "$<BUILD_INTERFACE:${STRATA_PUBLIC_INCLUDE_DIRS}>"
    $<INSTALL_INTERFACE:include>)
  target_compile_features(${tgt} PUBLIC cxx_std_20)
  if(STRATA_HAVE_DNNL)
    target_link_libraries(${tgt} PRIVATE ${DNNL_LIBRARY})
  endif()
  target_link_libraries(${tgt} PRIVATE ${OPENBLAS_LIBRARY}
                        PUBLIC OpenMP::OpenMP_CXX Threads::Threads)
  if(STRATA_HAVE_CUDA)
    target_link_libraries(${tgt} PRIVATE CUDA::cudart CUDA::cublasLt CUDA::cublas)
  endif()
  if(STRATA_HAVE_CUDNN)
    target_link_libraries(${tgt} PRIVATE ${CUDNN_LIBRARY})
  endif()
  if(STRATA_HAVE_CUDNN_FRONTEND)
    target_link_libraries(${tgt} PRIVATE CUDA::nvrtc)  # the frontend compiles some of its engines at run time
  endif()
  if(TARGET strata_io)
    target_link_libraries(${tgt} PRIVATE PNG::PNG JPEG::JPEG ZLIB::ZLIB)  # io/images decoders, io/graphs .gz
    target_link_libraries(${tgt} PRIVATE ${STRATA_ICU_UC_LIBRARY})  # io/text: Unicode for the BERT tokenizer
  endif()
  if(TARGET strata_io OR TARGET strata_memory)
    target_link_libraries(${tgt} PRIVATE protobuf::libprotobuf)  # checkpoint index, cache plans
  endif()
  if(STRATA_HAVE_URING)
    target_link_libraries(${tgt} PRIVATE PkgConfig::URING)  # the tensor cache's NVMe tier
  endif()
  target_link_libraries(${tgt} PRIVATE ${CMAKE_DL_LIBS})  # libcufile is loaded at run time
  if(STRATA_HAVE_MPI)
    target_link_libraries(${tgt} PRIVATE ${MPI_CXX_LIBRARIES})  # core/dist
  endif()
  if(STRATA_HAVE_NCCL)
    target_link_libraries(${tgt} PRIVATE ${NCCL_LIBRARY} CUDA::cudart)
  endif()
  set_target_properties(${tgt} PROPERTIES OUTPUT_NAME strata)
endforeach()
set_target_properties(strata PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
add_library(Strata::strata ALIAS strata)
add_library(Strata::strata_static ALIAS strata_static)
