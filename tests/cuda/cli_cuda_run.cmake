# gkrt run --backend cuda on the seeds' MyNet. On a machine with a GPU it must print the
# seeds' result and exit 0; without one (or with EXPECT_UNAVAILABLE set) it must print
# "cuda: unavailable: <reason>" (containing EXPECT_UNAVAILABLE, if given) and exit non-zero.
execute_process(COMMAND ${GKRT} run ${EX}/mynet.gkm --input x=${EX}/mynet_x.npy --backend cuda --print
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("exit ${rc}: ${all}")
if(all MATCHES "cuda: unavailable: ")
  if(rc EQUAL 0)
    message(FATAL_ERROR "gkrt said cuda is unavailable but exited 0")
  endif()
  if(DEFINED EXPECT_UNAVAILABLE AND NOT all MATCHES "${EXPECT_UNAVAILABLE}")
    message(FATAL_ERROR "the reason does not name ${EXPECT_UNAVAILABLE}")
  endif()
elseif(DEFINED EXPECT_UNAVAILABLE)
  message(FATAL_ERROR "expected cuda: unavailable: ... (${EXPECT_UNAVAILABLE})")
elseif(NOT rc EQUAL 0 OR NOT all MATCHES "result: \\[\\[2\\. 2\\. 2\\. 2\\.\\]")
  message(FATAL_ERROR "gkrt run --backend cuda neither ran MyNet nor said why cuda is unavailable")
endif()
