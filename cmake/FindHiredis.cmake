# Finds hiredis and defines the imported target Hiredis::Hiredis.
# Debian's hiredis 0.14 ships a config file that sets variables but no target.
find_path(Hiredis_INCLUDE_DIR NAMES hiredis/hiredis.h)
find_library(Hiredis_LIBRARY NAMES libhiredis.a hiredis)

if(Hiredis_INCLUDE_DIR AND EXISTS "${Hiredis_INCLUDE_DIR}/hiredis/hiredis.h")
  file(STRINGS "${Hiredis_INCLUDE_DIR}/hiredis/hiredis.h" _hiredis_version_lines
       REGEX "^#define HIREDIS_(MAJOR|MINOR|PATCH) [0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "HIREDIS_${_part} ([0-9]+)" _match "${_hiredis_version_lines}")
    set(_hiredis_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(Hiredis_VERSION "${_hiredis_MAJOR}.${_hiredis_MINOR}.${_hiredis_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hiredis
  REQUIRED_VARS Hiredis_LIBRARY Hiredis_INCLUDE_DIR
  VERSION_VAR Hiredis_VERSION)

if(Hiredis_FOUND AND NOT TARGET Hiredis::Hiredis)
  add_library(Hiredis::Hiredis UNKNOWN IMPORTED)
  set_target_properties(Hiredis::Hiredis PROPERTIES
    IMPORTED_LOCATION "${Hiredis_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Hiredis_INCLUDE_DIR}")
endif()
mark_as_advanced(Hiredis_INCLUDE_DIR Hiredis_LIBRARY)
