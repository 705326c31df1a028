"""Runs pytest on the files given, with the Python this build's module is for (cmake/PythonInterpreter.cmake).

A Python without pytest cannot run the module's tests: that is said in one line and the exit status is 77, which
ctest reports as skipped (SKIP_RETURN_CODE), not failed. The engine, CLI and window tests of the build are not
affected by it.
"""
import sys

try:
    import pytest
except ImportError:
    print(f"SKIPPED: pytest is not installed for {sys.executable} (the Python this build's module is for); "
          "install it there (Debian: python3-pytest; a venv: pip install pytest), or configure with "
          "-DPython_EXECUTABLE=a Python that has it")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
