# oar's layers: one CMake object library per concern, each naming the layers it builds on.
# liboar.so is all of them in one shared object (op and kernel registrations must all be kept).
# ${CMAKE_BINARY_DIR}/layers.txt records every layer's folders and declared dependencies; the
# suite's layering check (test/architecture/layering_test.cc) fails when a file includes a
# header of a layer its own does not build on, or when the declarations form a cycle.

set(OAR_LAYERS_FILE ${CMAKE_BINARY_DIR}/layers.txt)
file(WRITE ${OAR_LAYERS_FILE} "# layer|folders|layers it builds on (written by cmake/layers.cmake)\n")

# What every layer compiles with: the source and generated-header roots and the packages.
add_library(oar_compile_env INTERFACE)
target_include_directories(oar_compile_env INTERFACE ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
target_include_directories(oar_compile_env SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS}
                           ${Protobuf_INCLUDE_DIRS})
target_compile_definitions(oar_compile_env INTERFACE ${LLVM_DEFINITIONS})
target_link_libraries(oar_compile_env INTERFACE LLVM protobuf::libprotobuf Threads::Threads cppzmq
                      DNNL::dnnl ZLIB::ZLIB OpenMP::OpenMP_CXX)

# Records a layer without building it (kernels/cuda is its own library, built only with nvcc).
function(oar_declare_layer name)
  cmake_parse_arguments(L "" "" "DIRS;DEPENDS" ${ARGN})
  if(NOT L_DIRS)
    set(L_DIRS ${name})
  endif()
  string(REPLACE ";" " " dirs "${L_DIRS}")
  string(REPLACE ";" " " deps "${L_DEPENDS}")
  file(APPEND ${OAR_LAYERS_FILE} "${name}|${dirs}|${deps}\n")
endfunction()

# oar_layer(NAME [DIRS folder...] [DEPENDS layer...]): the .cc and .proto files directly in each
# folder (the layer's own name by default) become object library oar_<NAME, / as _>.
function(oar_layer name)
  cmake_parse_arguments(L "" "" "DIRS;DEPENDS" ${ARGN})
  if(NOT L_DIRS)
    set(L_DIRS ${name})
  endif()
  set(sources)
  set(protos)
  foreach(dir ${L_DIRS})
    file(GLOB dir_sources CONFIGURE_DEPENDS ${dir}/*.cc)
    file(GLOB dir_protos CONFIGURE_DEPENDS ${dir}/*.proto)
    list(APPEND sources ${dir_sources})
    list(APPEND protos ${dir_protos})
  endforeach()
  string(REPLACE "/" "_" target oar_${name})
  add_library(${target} OBJECT ${sources} ${protos})
  target_link_libraries(${target} PUBLIC oar_compile_env)
  foreach(dep ${L_DEPENDS})
    string(REPLACE "/" "_" dep_target oar_${dep})
    target_link_libraries(${target} PUBLIC ${dep_target})
  endforeach()
  if(protos)
    # Generated as build/<folder>/<name>.pb.h, included as "<folder>/<name>.pb.h".
    protobuf_generate(TARGET ${target} LANGUAGE cpp IMPORT_DIRS ${CMAKE_SOURCE_DIR}
                      PROTOC_OUT_DIR ${CMAKE_BINARY_DIR})
  endif()
  # LLVM's, protobuf's and the standard library's headers take 2 to 4 s of each file's compile:
  # parsed once, they save a quarter of the build (the first layer parses them for all).
  if(name STREQUAL "support")
    target_precompile_headers(${target} PRIVATE ${CMAKE_SOURCE_DIR}/cmake/precompiled.h)
  else()
    target_precompile_headers(${target} REUSE_FROM oar_support)
  endif()
  set_property(GLOBAL APPEND PROPERTY OAR_LAYER_TARGETS ${target})
  oar_declare_layer(${name} DIRS ${L_DIRS} DEPENDS ${L_DEPENDS})
endfunction()

# Bottom to top. A layer may include the headers of the layers it names and of theirs.
oar_layer(support)                           # hashes, errors, endpoints, signals, logs
oar_layer(ir DEPENDS support)                # programs of blocks of ops and vars
oar_layer(ops DEPENDS ir)                    # each op's schema, shapes and gradient
oar_layer(executor DEPENDS ops)              # tensors, scopes, kernels' registry, running a block
oar_layer(feed DEPENDS executor)             # data: formats, schemas, readers, batches
oar_layer(kernels DIRS kernels kernels/cpu DEPENDS feed) # the CPU kernels
oar_layer(train DEPENDS feed)                # the training loop of one process
oar_layer(checkpoint DEPENDS train)          # saving and loading params and tables
oar_layer(transpiler DEPENDS checkpoint)     # one program into N trainers and M pservers
oar_layer(serving DEPENDS checkpoint kernels) # export, inference programs, predictions
oar_layer(api DEPENDS feed)                  # layers, optimizers, recipes: writing a model
oar_layer(runtime/wire DEPENDS executor)     # the messages between nodes
oar_layer(runtime/security DEPENDS support)  # CURVE keys, ZAP, who may bind and connect
oar_layer(runtime/transport DEPENDS runtime/wire runtime/security) # links, held ports, servers
oar_layer(runtime/tables DEPENDS checkpoint) # distributed tables' rows on a pserver
oar_layer(runtime/trainer DEPENDS runtime/transport runtime/security) # the trainer's client
oar_layer(runtime/pserver DEPENDS runtime/tables runtime/transport)
oar_layer(runtime/cluster DEPENDS transpiler runtime/transport) # who is in a job
oar_layer(runtime/collective DEPENDS runtime/transport) # all-reduce among trainers (Gloo)
target_link_libraries(oar_runtime_collective PUBLIC gloo)
oar_layer(runtime/node DEPENDS runtime/trainer runtime/pserver runtime/cluster runtime/collective
          serving)
oar_declare_layer(kernels/cuda DEPENDS kernels) # liboar_cuda (CMakeLists.txt)
oar_declare_layer(tools/common DEPENDS train transpiler) # what the command-line tools share
oar_declare_layer(tools DEPENDS runtime/node api tools/common) # the command-line tools
oar_declare_layer(python DIRS python/src DEPENDS runtime/node api serving) # the Python module
