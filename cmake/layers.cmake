# tokenmill_layer(NAME [DEPS...]): one static library per folder of src/, built from every
# .cc in it (kernel subfolders included), linking only the layers named as its deps.
function(tokenmill_layer name)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cc)
  if(NOT TOKENMILL_X86)
    # The x86 kernel files are left out; their callers check __x86_64__ (and the NEON
    # ones __aarch64__).
    list(FILTER sources EXCLUDE REGEX "_(avx2|avxvnni|avx512|amx)\\.cc$")
  endif()
  if(NOT TOKENMILL_ARM64)
    list(FILTER sources EXCLUDE REGEX "_(neon|neon_dotprod)\\.cc$")
  endif()
  if(NOT sources)
    # A layer not written yet still links, so the layers above it can be built.
    set(placeholder ${PROJECT_BINARY_DIR}/empty_layer_${name}.cc)
    file(WRITE ${placeholder} "// layer ${name} has no sources yet\n")
    set(sources ${placeholder})
  endif()
  add_library(tm_${name} STATIC ${sources})
  target_include_directories(tm_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  foreach(dep IN LISTS ARGN)
    target_link_libraries(tm_${name} PUBLIC tm_${dep})
  endforeach()
  # Files named *_avx2.cc / *_avxvnni.cc / *_avx512.cc / *_amx.cc / *_neon_dotprod.cc hold
  # kernels for one instruction set (*_neon.cc: arm64's baseline, no flag); they are only
  # ever called after a run-time CPU check. The fuzz and ThreadSanitizer
  # builds leave them uninstrumented: they parse nothing and share no state between
  # threads (each thread writes its own rows; the pool's hand-offs, in base/, are
  # instrumented), and instrumented they would take most of those builds' time and slow
  # every forward pass by an order of magnitude.
  set(no_fuzz "")
  if(TOKENMILL_FUZZ OR TOKENMILL_SANITIZE STREQUAL "thread")
    set(no_fuzz ";-fno-sanitize=all")
  endif()
  foreach(src IN LISTS sources)
    if(src MATCHES "_avx2\\.cc$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c${no_fuzz}")
    elseif(src MATCHES "_avxvnni\\.cc$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni${no_fuzz}")
    elseif(src MATCHES "_amx\\.cc$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512vnni;-mavx512bf16;-mamx-tile;-mamx-int8${no_fuzz}")
    elseif(src MATCHES "_neon_dotprod\\.cc$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod${no_fuzz}")
    elseif(src MATCHES "_avx512\\.cc$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512vnni;-mavx512bf16${no_fuzz}")
    endif()
  endforeach()
endfunction()
