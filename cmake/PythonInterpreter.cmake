# The one Python of a build: the module (python/) is built for it and its tests run with it, in every preset alike.
# It is the Python whose torch is the LibTorch this build links, so that `import torch` and `import attnscope` share one:
# of /usr/bin/python3 and the python3 first on PATH (a pyenv or conda one), the one whose torch folder is
# ATTNSCOPE_LIBTORCH_DIR, or, building against Debian's LibTorch, Debian's python3-torch. When none is (the libtorch2
# preset's LibTorch, fetched from a wheel with no Python of its own), Debian's /usr/bin/python3. Set before LibTorch's
# CMake config runs, which otherwise takes whatever python3 comes first on PATH. -DPython_EXECUTABLE=... chooses
# another; under scikit-build-core (`pip install .`) it is the Python running pip.
if(SKBUILD OR DEFINED Python_EXECUTABLE)
    message(STATUS "Python (the module and its tests): ${Python_EXECUTABLE} (given, or chosen at this folder's first configure)")
    return()
endif()

if(ATTNSCOPE_LIBTORCH_DIR)
    file(REAL_PATH "${ATTNSCOPE_LIBTORCH_DIR}" linked_torch)
else()
    set(linked_torch "/usr/lib/python3/dist-packages/torch") # python3-torch, over Debian's libtorch
endif()

set(python_candidates)
if(EXISTS /usr/bin/python3)
    list(APPEND python_candidates /usr/bin/python3)
endif()
find_program(path_python3 NAMES python3 NO_CACHE)
if(path_python3)
    list(APPEND python_candidates "${path_python3}")
endif()
list(REMOVE_DUPLICATES python_candidates)

set(chosen_python "")
set(chosen_torch "")
foreach(candidate ${python_candidates})
    execute_process(COMMAND "${candidate}" -c "import os, torch; print(os.path.realpath(os.path.dirname(torch.__file__)))"
                    OUTPUT_VARIABLE candidate_torch OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE candidate_rc ERROR_QUIET)
    if(candidate_rc EQUAL 0 AND candidate_torch STREQUAL linked_torch)
        set(chosen_python "${candidate}")
        set(chosen_torch "${candidate_torch}")
        break()
    endif()
endforeach()
if(chosen_python)
    message(STATUS "Python (the module and its tests): ${chosen_python}, whose torch is the LibTorch this build links (${chosen_torch})")
else()
    list(GET python_candidates 0 chosen_python)
    message(STATUS "Python (the module and its tests): ${chosen_python}; no Python here has this build's LibTorch (${linked_torch}) "
                   "as its torch, so the module's tests run without importing that torch")
endif()
set(Python_EXECUTABLE "${chosen_python}" CACHE FILEPATH "The Python the module is built for and its tests run with (cmake/PythonInterpreter.cmake)")
