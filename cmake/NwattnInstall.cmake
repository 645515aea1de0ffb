# Install rules: the header, libnwattn.so.<version> with its SONAME and development links,
# pkg-config's nwattn.pc and a relocatable CMake package (find_package(nwattn) -> nwattn::nwattn).
#
# Components: "Runtime" is the shared library (libnwattn.so.0 and the real file), "Development"
# is everything a build against the library needs (header, libnwattn.so link, .pc, CMake files).
include(CMakePackageConfigHelpers)

#
# The places are the usual ones below the library directory (tests/packaging expects them):
#   <libdir>/cmake/nwattn/  and  <libdir>/pkgconfig/nwattn.pc
set(NWATTN_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/nwattn")
set(NWATTN_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# ---- Library and header --------------------------------------------------------------------
# OpenBLAS is a PRIVATE dependency of a shared library, so it is not part of the exported
# interface: consumers link libnwattn.so only, and the dynamic loader brings libopenblas.so.0.
install(TARGETS nwattn
  EXPORT nwattnTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          COMPONENT Runtime
          NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT Development
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT Runtime)
# (The include directory reaches the export through the target's own
# $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>, set in src/CMakeLists.txt.)

install(FILES "${PROJECT_SOURCE_DIR}/include/nwattn.h"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  COMPONENT Development)

# ---- CMake package ---------------------------------------------------------------------------
# nwattnTargets.cmake computes the prefix from its own location, so the installed tree can be
# moved (or installed with `cmake --install build --prefix DIR`) and still be found.
install(EXPORT nwattnTargets
  NAMESPACE nwattn::
  FILE nwattnTargets.cmake
  DESTINATION "${NWATTN_INSTALL_CMAKEDIR}"
  COMPONENT Development)

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/nwattnConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/nwattnConfig.cmake"
  INSTALL_DESTINATION "${NWATTN_INSTALL_CMAKEDIR}")

# 0.x releases share the ABI of SONAME libnwattn.so.0; a new major version breaks it.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/nwattnConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion)

install(FILES
  "${PROJECT_BINARY_DIR}/nwattnConfig.cmake"
  "${PROJECT_BINARY_DIR}/nwattnConfigVersion.cmake"
  DESTINATION "${NWATTN_INSTALL_CMAKEDIR}"
  COMPONENT Development)

# ---- pkg-config ------------------------------------------------------------------------------
# nwattn.pc holds absolute paths, so it is written at install time for the prefix actually used
# (`cmake --install build --prefix DIR` included; DESTDIR is not part of the paths).
foreach(_nwattn_dir IN ITEMS LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_nwattn_dir}}")
    set(_nwattn_pc_${_nwattn_dir} "${CMAKE_INSTALL_${_nwattn_dir}}")
  else()
    set(_nwattn_pc_${_nwattn_dir} "\${prefix}/${CMAKE_INSTALL_${_nwattn_dir}}")
  endif()
endforeach()

install(CODE "
  set(_nwattn_pc_template [[${PROJECT_SOURCE_DIR}/pkgconfig/nwattn.pc.in]])
  set(_nwattn_pc_staged [[${PROJECT_BINARY_DIR}/pkgconfig/nwattn.pc]])
  set(_nwattn_pc_destination [[${NWATTN_INSTALL_PKGCONFIGDIR}]])
  set(NWATTN_PC_LIBDIR [[${_nwattn_pc_LIBDIR}]])
  set(NWATTN_PC_INCLUDEDIR [[${_nwattn_pc_INCLUDEDIR}]])
  set(NWATTN_PC_VERSION [[${PROJECT_VERSION}]])
  set(NWATTN_PC_DESCRIPTION [[${PROJECT_DESCRIPTION}]])
" COMPONENT Development)

install(CODE [[
  set(NWATTN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  if(NOT IS_ABSOLUTE "${NWATTN_PC_PREFIX}")
    get_filename_component(NWATTN_PC_PREFIX "${NWATTN_PC_PREFIX}" ABSOLUTE BASE_DIR "$ENV{PWD}")
  endif()
  string(REGEX REPLACE "(.)/+$" "\\1" NWATTN_PC_PREFIX "${NWATTN_PC_PREFIX}")
  configure_file("${_nwattn_pc_template}" "${_nwattn_pc_staged}" @ONLY)
  if(IS_ABSOLUTE "${_nwattn_pc_destination}")
    set(_nwattn_pc_dir "${_nwattn_pc_destination}")
  else()
    set(_nwattn_pc_dir "${CMAKE_INSTALL_PREFIX}/${_nwattn_pc_destination}")
  endif()
  file(INSTALL DESTINATION "${_nwattn_pc_dir}" TYPE FILE FILES "${_nwattn_pc_staged}")
]] COMPONENT Development)

# ---- libnwattn_mpi's nwattn-mpi.pc (mpi/CMakeLists.txt), the same way ----------------------
if(NWATTN_MPI_BUILT)
  install(CODE "
    set(_nwattn_mpi_pc_template [[${NWATTN_MPI_PC_TEMPLATE}]])
    set(_nwattn_mpi_pc_staged [[${PROJECT_BINARY_DIR}/pkgconfig/nwattn-mpi.pc]])
    set(NWATTN_MPI_PC_REQUIRES [[${NWATTN_MPI_PC_REQUIRES}]])
    set(NWATTN_MPI_PC_CFLAGS [[${NWATTN_MPI_PC_CFLAGS}]])
    set(NWATTN_MPI_PC_LIBS [[${NWATTN_MPI_PC_LIBS}]])
  " COMPONENT Development)
  install(CODE [[
    configure_file("${_nwattn_mpi_pc_template}" "${_nwattn_mpi_pc_staged}" @ONLY)
    file(INSTALL DESTINATION "${_nwattn_pc_dir}" TYPE FILE FILES "${_nwattn_mpi_pc_staged}")
  ]] COMPONENT Development)
endif()
