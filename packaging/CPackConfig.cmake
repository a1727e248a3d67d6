# Packaging: `cpack -G DEB` (run in the build folder) builds mpwb_<version>_<arch>.deb with mpwb,
# mpwb-cli, the .desktop entry, the icons and the AppStream
# metadata. Included at the end of the top-level CMakeLists.txt, after every target exists.
# Depends comes from dpkg-shlibdeps over the installed binaries, plus the Qt plugins no binary
# links to (the xcb platform plugin lives in libqt6gui6; the SVG icon loader in libqt6svg6).

include(GNUInstallDirs)

if(MPWB_GUI)
  set(_mpwb_res ${PROJECT_SOURCE_DIR}/resources)
  set(_mpwb_id io.github.mpwb.Workbench)
  install(FILES ${_mpwb_res}/${_mpwb_id}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${_mpwb_res}/${_mpwb_id}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  install(FILES ${_mpwb_res}/icons/${_mpwb_id}.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  foreach(size 16 32 48 64 128 256)
    install(FILES ${_mpwb_res}/icons/hicolor/${size}x${size}/${_mpwb_id}.png
            DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps)
  endforeach()
endif()

set(CPACK_PACKAGE_NAME "mpwb")
set(CPACK_PACKAGE_VENDOR "MP Workbench developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Mixed-precision training workbench (FP32 vs FP16/BF16, loss scaling)")
set(CPACK_PACKAGE_DESCRIPTION
    "MP Workbench trains small networks in FP32 and in mixed precision side by side and shows \
loss, accuracy, throughput, the loss scale with every overflow and the exponent histograms of the \
gradients against the range of each format. Runs are stored in SQLite and can be exported as \
comparison reports. Includes the GUI (mpwb), and the headless mpwb-cli.")
set(CPACK_PACKAGE_CONTACT "MP Workbench developers <mpwb@example.org>")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(MPWB_GUI)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6svg6")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dataset-fashion-mnist, fonts-dejavu-core")
endif()
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/mpwb/mpwb")

set(CPACK_GENERATOR "DEB")
set(CPACK_SOURCE_GENERATOR "TGZ")
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/" "/\\\\.git/")
include(CPack)
