#!/bin/sh
# The headless build (ATTNSCOPE_GUI=OFF) links no Qt and no QCustomPlot: checked on what the dynamic loader loads
# for each executable (ldd). Usage: check_no_qt.sh [--expect-qt] EXECUTABLE...
#
# One exception, not ours to remove: Debian's libtorch_cpu.so links libopencv_highgui.so, which links Qt 5 (Widgets,
# Gui, Core, Test, OpenGL), so every program on Debian's LibTorch has those in its ldd. A Qt or QCustomPlot library
# is accepted only when LibTorch itself brings it (it is in ldd of the libtorch_cpu.so the executable loads) and
# the executable does not name it itself (readelf's NEEDED); anything else fails, Qt 6 and QCustomPlot included.
#
# --expect-qt inverts the verdict: the Qt build runs it on its attnscope-cli, which links Qt 6 and QCustomPlot,
# to show that the check sees them.
set -u
expect_qt=0
if [ "${1:-}" = --expect-qt ]; then
    expect_qt=1
    shift
fi
[ $# -gt 0 ] || { echo "usage: $0 [--expect-qt] EXECUTABLE..."; exit 2; }
qt='qt|qcustomplot'
found=0
for exe in "$@"; do
    [ -x "$exe" ] || { echo "$exe: no such executable"; exit 2; }
    loaded=$(ldd "$exe") || { echo "$exe: ldd failed"; exit 2; }
    needed=$(readelf -d "$exe" | awk -F'[][]' '/NEEDED/ { print $2 }') || { echo "$exe: readelf failed"; exit 2; }
    torch=$(printf '%s\n' "$loaded" | awk '$1 ~ /^libtorch_cpu\.so/ { print $3; exit }')
    from_torch=
    [ -n "$torch" ] && from_torch=$(ldd "$torch" | grep -iE "$qt" | awk '{ print $1 }')
    for lib in $(printf '%s\n' "$loaded" | grep -iE "$qt" | awk '{ print $1 }'); do
        if printf '%s\n' "$needed" | grep -qxF "$lib"; then
            echo "$exe: links $lib"
            found=1
        elif ! printf '%s\n' "$from_torch" | grep -qxF "$lib"; then
            echo "$exe: loads $lib (not through LibTorch)"
            found=1
        fi
    done
done
if [ $expect_qt -eq 1 ]; then
    [ $found -eq 1 ] && { echo "no-Qt check: sees the Qt it should"; exit 0; }
    echo "no-Qt check: found no Qt in $*, which links Qt 6: the check is blind"
    exit 1
fi
[ $found -eq 0 ] && echo "no Qt, no QCustomPlot: $*"
exit $found
