# Packaging: `cpack` (run in the build folder) builds two Debian packages:
#   mpwb       mpwb, mpwb-cli, the .desktop entry, the icons, the AppStream metadata, the man
#              pages (help2man, at build time), the copyright file and the changelog. It needs
#              only Debian 12 packages: the programs load the CUDA backend at run time and train
#              on the CPU without it.
#   mpwb-cuda  the CUDA backend module (libmpwb_cuda.so), only in builds that have it.
# Included at the end of the top-level CMakeLists.txt, after every target exists.
# mpwb's Depends comes from dpkg-shlibdeps over the installed binaries, plus the Qt plugins no
# binary links to (the xcb platform plugin lives in libqt6gui6; the SVG icon loader in
# libqt6svg6). mpwb-cuda's is written here: the CUDA libraries it loads are not Debian packages
# on the machines it targets, so dpkg-shlibdeps could only fail on them; its description names
# them instead.

include(GNUInstallDirs)

set(MPWB_PACKAGE_MAINTAINER "MP Workbench maintainers <maintainers@users.noreply.a-seed-c88e7a3a.example>"
    CACHE STRING "Maintainer field of the Debian packages (the repository's commit identity by default)")

set(_mpwb_pkg ${PROJECT_SOURCE_DIR}/packaging)
set(_mpwb_doc ${CMAKE_INSTALL_DATADIR}/doc)

if(MPWB_GUI)
  set(_mpwb_res ${PROJECT_SOURCE_DIR}/resources)
  set(_mpwb_id io.github.mpwb.Workbench)
  install(FILES ${_mpwb_res}/${_mpwb_id}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT mpwb)
  install(FILES ${_mpwb_res}/${_mpwb_id}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo COMPONENT mpwb)
  install(FILES ${_mpwb_res}/icons/${_mpwb_id}.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps COMPONENT mpwb)
  foreach(size 16 32 48 64 128 256)
    install(FILES ${_mpwb_res}/icons/hicolor/${size}x${size}/${_mpwb_id}.png
            DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps COMPONENT mpwb)
  endforeach()
endif()

# Man pages from the programs' own --help (it works without a display), so they never drift
# from the options. The version is given: mpwb's --version says "MP Workbench 0.1.0", which
# help2man would take for the program's name; stderr (Qt's notes) is left out. Not in sanitizer builds: those are for the suite, and a leak
# report at exit would fail the build.
find_program(MPWB_HELP2MAN help2man)
find_program(MPWB_GZIP gzip)
if(MPWB_HELP2MAN AND MPWB_GZIP AND NOT MPWB_SANITIZE)
  set(_mpwb_man_pages)
  set(_mpwb_man_programs mpwb-cli "headless mixed-precision training from the command line")
  if(TARGET mpwb)
    list(APPEND _mpwb_man_programs mpwb "mixed-precision training workbench")
  endif()
  while(_mpwb_man_programs)
    list(POP_FRONT _mpwb_man_programs program summary)
    set(page ${PROJECT_BINARY_DIR}/man/${program}.1)
    add_custom_command(OUTPUT ${page}.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
      COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY
              ${MPWB_HELP2MAN} --no-info --section=1 --name=${summary} --version-string=${PROJECT_VERSION}
              --output=${page} $<TARGET_FILE:${program}>
      COMMAND ${MPWB_GZIP} -9nf ${page}
      DEPENDS ${program}
      COMMENT "Man page of ${program} (help2man)"
      VERBATIM)
    list(APPEND _mpwb_man_pages ${page}.gz)
  endwhile()
  add_custom_target(mpwb_man_pages ALL DEPENDS ${_mpwb_man_pages})
  install(FILES ${_mpwb_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT mpwb)
endif()

# copyright and the changelog, in each package's doc folder (Debian wants both in every package).
set(_mpwb_changelog ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(OUTPUT ${_mpwb_changelog}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/packaging
  COMMAND sh -c "gzip -9nc '${_mpwb_pkg}/changelog' > '${_mpwb_changelog}'"
  DEPENDS ${_mpwb_pkg}/changelog
  VERBATIM)
add_custom_target(mpwb_changelog ALL DEPENDS ${_mpwb_changelog})
set(_mpwb_components mpwb)
if(TARGET mpwb_cuda)
  list(APPEND _mpwb_components mpwb-cuda)
endif()
foreach(component ${_mpwb_components})
  install(FILES ${_mpwb_pkg}/copyright ${_mpwb_changelog} DESTINATION ${_mpwb_doc}/${component} COMPONENT ${component})
endforeach()

set(CPACK_PACKAGE_NAME "mpwb")
set(CPACK_PACKAGE_VENDOR "MP Workbench developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${MPWB_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${_mpwb_components})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")

set(CPACK_DEBIAN_MPWB_PACKAGE_NAME "mpwb")
set(CPACK_DEBIAN_MPWB_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_MPWB_DESCRIPTION "mixed-precision training workbench (FP32 vs FP16/BF16)
MP Workbench trains small networks in FP32 and in mixed precision side by side
and shows loss, accuracy, throughput, the loss scale with every overflow and
the exponent histograms of the gradients against the range of each format.
Runs are stored in SQLite and can be exported as comparison reports.
Includes the GUI (mpwb) and the headless mpwb-cli. Both train on the CPU,
where the reduced formats are emulated bit for bit; install mpwb-cuda to
train on an NVIDIA GPU.")
if(MPWB_GUI)
  set(CPACK_DEBIAN_MPWB_PACKAGE_DEPENDS "libqt6svg6")
  set(CPACK_DEBIAN_MPWB_PACKAGE_RECOMMENDS "dataset-fashion-mnist, fonts-dejavu-core")
endif()

set(CPACK_DEBIAN_MPWB-CUDA_PACKAGE_NAME "mpwb-cuda")
set(CPACK_DEBIAN_MPWB-CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_MPWB-CUDA_PACKAGE_DEPENDS
    "mpwb (= ${PROJECT_VERSION}), libc6 (>= 2.34), libgcc-s1 (>= 3.0), libstdc++6 (>= 12)")
set(CPACK_DEBIAN_MPWB-CUDA_DESCRIPTION "CUDA backend of MP Workbench (NVIDIA GPUs)
The module libmpwb_cuda.so, which mpwb and mpwb-cli load at run time to train
on an NVIDIA GPU with cuBLASLt, cuDNN and their own kernels.
.
It needs NVIDIA's CUDA 13 runtime libraries, which are not Debian packages:
libcudart.so.13, libcublasLt.so.13 and libcudnn.so.9 (cuDNN 9) on the
loader's path, and an NVIDIA driver for CUDA 13. Without them the programs
say in one line which library is missing and train on the CPU.")

set(CPACK_GENERATOR "DEB")
set(CPACK_SOURCE_GENERATOR "TGZ")
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/" "/\\\\.git/")
include(CPack)
