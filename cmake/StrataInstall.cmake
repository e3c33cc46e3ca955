# Installs the library, the public headers and a package config for find_package(Strata).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Two export sets: the shared library's interface needs only OpenMP and Threads (the public headers
# include the standard library alone), while the static one carries every library it links.
install(TARGETS strata EXPORT StrataTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS strata_static EXPORT StrataStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir ${STRATA_PUBLIC_INCLUDE_DIRS})
  install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/include/strata/config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/strata)

install(EXPORT StrataTargets NAMESPACE Strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
install(EXPORT StrataStaticTargets NAMESPACE Strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/StrataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/StrataConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/StrataConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/StrataConfig.cmake ${PROJECT_BINARY_DIR}/StrataConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
