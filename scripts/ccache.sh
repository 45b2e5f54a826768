# Sourced by setup.sh and test.sh: compile through ccache where it is installed
# (setup.sh --tests installs it). A second checkout on the same machine then
# compiles nothing it compiled before: CCACHE_BASEDIR turns the checkout's
# absolute paths into relative ones, so another clone's objects match, and
# CCACHE_NOHASHDIR does the same for the debug (sanitizer) build, whose debug
# information then names the first checkout's directories. CMake (>= 3.17)
# reads the launcher variables for every tree it configures, collkit build's
# included. Compilers are known by their content, not their file's time: the
# MPICH wheel's relocatable mpicc wrapper is written afresh into each checkout
# (.mpich), so by time (ccache's default) no second checkout ever hit (44 s of
# compiling in setup). COLLKIT_NO_CCACHE=1 turns it off.
if [[ -z ${COLLKIT_NO_CCACHE:-} ]] && command -v ccache >/dev/null; then
    export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
    export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_COMPILERCHECK=content
fi
