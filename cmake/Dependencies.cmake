# All third-party packages come from Debian (see the Makefile's DEPS), except LibTorch when ATTNSCOPE_LIBTORCH_DIR
# names another one: the libtorch2 preset's LibTorch 2.11 from PyPI's torch wheel (scripts/get-libtorch.sh), a
# pip-installed torch, or a LibTorch zip from pytorch.org.
set(ATTNSCOPE_LIBTORCH_DIR "" CACHE PATH "LibTorch to build against instead of Debian's (a folder with share/cmake/Torch)")
# Torch's CMake config leaves its libraries and Caffe2's config in the cache: a build folder stays with one LibTorch.
if(DEFINED ATTNSCOPE_LIBTORCH_CONFIGURED AND NOT ATTNSCOPE_LIBTORCH_CONFIGURED STREQUAL ATTNSCOPE_LIBTORCH_DIR)
    message(FATAL_ERROR "${CMAKE_BINARY_DIR} was configured against another LibTorch (ATTNSCOPE_LIBTORCH_DIR "
                        "'${ATTNSCOPE_LIBTORCH_CONFIGURED}', empty for Debian's): remove that folder to build against "
                        "'${ATTNSCOPE_LIBTORCH_DIR}'")
endif()
if(ATTNSCOPE_LIBTORCH_DIR)
    if(NOT EXISTS "${ATTNSCOPE_LIBTORCH_DIR}/share/cmake/Torch/TorchConfig.cmake")
        message(FATAL_ERROR "No LibTorch in ${ATTNSCOPE_LIBTORCH_DIR} (share/cmake/Torch/TorchConfig.cmake is missing): "
                            "run scripts/get-libtorch.sh (make libtorch2 does), or set LIBTORCH_DIR to a torch folder")
    endif()
    # First in the search: Torch's config looks for its libraries and Caffe2's config with PATHS, which come after
    # the system's, where Debian's LibTorch 1.13 would be found.
    list(PREPEND CMAKE_PREFIX_PATH "${ATTNSCOPE_LIBTORCH_DIR}")
    # A CUDA LibTorch's CMake config enables CUDA, which takes nvcc (on PATH or CUDACXX; the libtorch2 preset adds
    # /usr/local/cuda/bin to PATH). attnscope has no CUDA source, so without nvcc a wheel's LibTorch is linked as it
    # ships: torch::cudart, the one target of Torch's CUDA setup that its libraries name, is made here (its
    # public/cuda.cmake returns at once when that target exists). A GPU runs the build all the same.
    include(CheckLanguage)
    check_language(CUDA)
    cmake_path(SET wheel_cudart NORMALIZE "${ATTNSCOPE_LIBTORCH_DIR}/../nvidia/cu13/lib/libcudart.so.13")
    if(NOT CMAKE_CUDA_COMPILER AND EXISTS "${wheel_cudart}")
        add_library(torch::cudart INTERFACE IMPORTED)
        message(STATUS "No nvcc: LibTorch's CUDA libraries linked as the wheel ships them")
    endif()
endif()
find_package(Torch REQUIRED)
set(ATTNSCOPE_LIBTORCH_CONFIGURED "${ATTNSCOPE_LIBTORCH_DIR}" CACHE INTERNAL "")
# A wheel's LibTorch loads the CUDA runtime beside it (nvidia/cu13/lib, through its RPATH). Our programs link that
# one too rather than the CUDA toolkit's that Torch's config names: none of them names the host's CUDA libraries
# (in its NEEDED or RUNPATH), with nvcc or without.
if(ATTNSCOPE_LIBTORCH_DIR AND EXISTS "${wheel_cudart}")
    set_target_properties(torch::cudart PROPERTIES INTERFACE_LINK_LIBRARIES "${wheel_cudart}")
endif()
find_package(nlohmann_json 3 REQUIRED)
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)

# oneDNN for the forward's linear layers with weights packed once and the attention's products
# (engine/src/vit/PackedLinear.cpp, AttentionProducts.cpp): Debian's libdnnl-dev, the oneDNN 2 that Debian's LibTorch
# 1.13 links. LibTorch 2.x carries oneDNN 3 inside libtorch_cpu.so (its headers in LibTorch's include folder, where
# they would shadow Debian's; none of its symbols exported), so there the linear layers reach it through LibTorch's
# operators and the attention's products take at::matmul (docs/performance.md).
# Targets that use the paths link attnscope_onednn, which is empty when they are off.
add_library(attnscope_onednn INTERFACE)
if(Torch_VERSION VERSION_LESS 2)
    find_package(dnnl CONFIG QUIET)
    if(dnnl_FOUND)
        target_link_libraries(attnscope_onednn INTERFACE DNNL::dnnl)
        target_compile_definitions(attnscope_onednn INTERFACE ATTNSCOPE_HAVE_DNNL)
    else()
        message(STATUS "oneDNN not found (libdnnl-dev): linear layers through at::linear, slower on the CPU")
    endif()
else()
    # LibTorch 2.x: the linear layers on its own oneDNN 3 through its operators (src/vit/PackedLinearTorch.cpp,
    # on when LibTorch was built with oneDNN: ATTNSCOPE_TORCH_ONEDNN, PackedLinearPaths.h).
    message(STATUS "LibTorch ${Torch_VERSION}: Debian's oneDNN 2 not used (this LibTorch carries its own oneDNN 3); "
                   "linear layers through LibTorch's mkldnn::_linear_pointwise, attention products through at::matmul")
endif()

# The wheels of LibTorch 2.x export copies of libstdc++'s std::filesystem functions from libtorch.so and
# libtorch_cpu.so, unversioned (pytorch/pytorch#133437). The linker binds a program's references to the first
# library on its link line that defines them, and g++ names libstdc++ last: the program then calls LibTorch's
# copies, and remove_all(path) there jumps to address 0. libstdc++ first on every link line binds them to libstdc++
# (GLIBCXX_3.4.26) and puts it first in the load order; with Debian's LibTorch 1.13 nothing changes. Under the
# sanitizers gcc still puts their runtime first. Tested by tests/engine/LinkOrderTest.cpp.
add_link_options("SHELL:-Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state")
