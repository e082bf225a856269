# install + export + package config for find_package(emgpu).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY include/emgpu DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS emgpu EXPORT emgpuTargets)
install(EXPORT emgpuTargets NAMESPACE emgpu:: DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/emgpu)

configure_package_config_file(cmake/emgpuConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/emgpuConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/emgpu)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/emgpuConfigVersion.cmake
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/emgpuConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/emgpuConfigVersion.cmake
              cmake/emgpuDependencies.cmake
        DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/emgpu)
