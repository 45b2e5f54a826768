# Sourced by setup.sh and test.sh: compile through ccache where it is installed
# (setup.sh --tests installs it). A second checkout on the same machine then
# compiles nothing it compiled before: CCACHE_BASEDIR turns the checkout's
# absolute paths into relative ones, so another clone's objects match, and
# CCACHE_NOHASHDIR does the same for the debug (sanitizer) build, whose debug
# information then names the first checkout's directories. CMake (>= 3.17)
# reads the launcher variables for every tree it configures, collkit build's
# included. COLLKIT_NO_CCACHE=1 turns it off.
if [[ -z ${COLLKIT_NO_CCACHE:-} ]] && command -v ccache >/dev/null; then
    export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
    export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
