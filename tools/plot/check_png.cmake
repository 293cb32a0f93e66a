# The plot smoke test (tools/plot/plot.cmake): runs plot.py on a folder of small JSON files,
# then checks that each expected PNG exists, is more than a few kilobytes, starts with the PNG
# signature and an IHDR chunk, and has a plausible width and height. Fails otherwise.
#
#   cmake -DPYTHON=... -DSCRIPT=plot.py -DINPUT=DIR -DOUT=DIR "-DEXPECT=a.png;b.png" -P check_png.cmake

foreach(var PYTHON SCRIPT INPUT OUT EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_png.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${PYTHON} ${SCRIPT} --out ${OUT} ${INPUT} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "plot.py failed (${result})")
endif()

foreach(name IN LISTS EXPECT)
  set(png ${OUT}/${name})
  if(NOT EXISTS ${png})
    message(FATAL_ERROR "${name}: not written")
  endif()
  file(SIZE ${png} size)
  if(size LESS 4000)
    message(FATAL_ERROR "${name}: ${size} bytes, too small for a plot")
  endif()
  # Bytes 0-7: the signature; 8-11: the IHDR chunk's length (13); 12-15: "IHDR"; 16-19 and
  # 20-23: width and height, big-endian.
  file(READ ${png} head LIMIT 24 HEX)
  string(SUBSTRING "${head}" 0 16 signature)
  string(SUBSTRING "${head}" 16 16 ihdr)
  if(NOT signature STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "${name}: no PNG signature (${signature})")
  endif()
  if(NOT ihdr STREQUAL "0000000d49484452")
    message(FATAL_ERROR "${name}: no IHDR chunk first (${ihdr})")
  endif()
  string(SUBSTRING "${head}" 32 8 width_hex)
  string(SUBSTRING "${head}" 40 8 height_hex)
  math(EXPR width "0x${width_hex}")
  math(EXPR height "0x${height_hex}")
  if(width LESS 400 OR width GREATER 4000 OR height LESS 300 OR height GREATER 4000)
    message(FATAL_ERROR "${name}: ${width}x${height} pixels, not a plausible plot size")
  endif()
  message(STATUS "${name}: PNG ${width}x${height}, ${size} bytes")
endforeach()
