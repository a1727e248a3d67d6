# Decides whether the CUDA backend is built. AUTO builds it when a CUDA toolkit is found;
# the binary still falls back to the CPU at run time when no GPU or driver is present.
set(MPWB_HAVE_CUDA OFF)
if(NOT MPWB_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  # One architecture keeps nvcc's time on a 2-core CI machine short; H100 and H200 are sm_90.
  # Override with -DCMAKE_CUDA_ARCHITECTURES="80;90" for other GPUs.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(MPWB_HAVE_CUDA ON)
  elseif(MPWB_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MPWB_CUDA=ON but no CUDA toolkit was found")
  endif()
endif()
message(STATUS "MP Workbench CUDA backend: ${MPWB_HAVE_CUDA}")
