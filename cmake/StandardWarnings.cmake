# redlock_warnings: the warnings our own code must pass, linked PRIVATE to our own targets only.
add_library(redlock_warnings INTERFACE)
target_compile_options(redlock_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wconversion -Wsign-conversion -Wdouble-promotion
  -Wformat=2 -Wimplicit-fallthrough -Wmisleading-indentation -Wduplicated-cond -Wlogical-op)
if(REDLOCK_WERROR)
  target_compile_options(redlock_warnings INTERFACE -Werror)
endif()
