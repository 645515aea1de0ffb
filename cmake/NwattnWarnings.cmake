# Compiler flags shared by the library, the tests and the examples.
add_library(nwattn_warnings INTERFACE)
target_compile_options(nwattn_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wstrict-prototypes -Wmissing-prototypes -Wcast-qual -Wvla
  $<$<BOOL:${NWATTN_WERROR}>:-Werror>)

if(NWATTN_SANITIZE)
  add_compile_options(-fsanitize=${NWATTN_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${NWATTN_SANITIZE})
endif()
