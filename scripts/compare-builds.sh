#!/bin/sh
# The headless build (ATTNSCOPE_GUI=OFF) writes the same data as the Qt build: runs both builds' attnscope-cli on
# the same commands and compares every data file they write (CSV, JSON, NPY), byte for byte.
#
#   scripts/compare-builds.sh QT_BUILD_DIR HEADLESS_BUILD_DIR     e.g. build/release build/headless
#
# The commands: `make run`'s headless report (scripts/run.sh); every analysis with a perturbation
# (--noise gaussian:sigma=8), a NeuTRENO run and a compared model beside it, and --dump-tensors; two shards and
# their merge; `info --json`. Every command names its --formats, whose default differs (png in the Qt build, none
# in the headless one) and is recorded in the manifest. Both sides run in folders of the same name, with the same arguments, so the files
# may differ only where the builds do. manifest.json is compared without "timings" (how long the run took) and
# "figures" (which pictures were drawn: PNGs in the Qt build, none in the headless one). The pictures themselves
# are not data: the headless build must have none, and says so in one line on stderr where they were asked for.
# Exit status: 0 identical, 1 something differs (each difference printed), 2 usage or a run failed.
# KEEP=1 keeps the work folder.
set -u
[ $# -eq 2 ] || { echo "usage: $0 QT_BUILD_DIR HEADLESS_BUILD_DIR" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
for dir in "$1" "$2"; do
    [ -d "$dir" ] || { echo "compare-builds: $dir: no such build folder" >&2; exit 2; }
done
qt_cli=$(cd "$1" 2>/dev/null && pwd)/app/attnscope-cli
headless_cli=$(cd "$2" 2>/dev/null && pwd)/app/attnscope-cli
for cli in "$qt_cli" "$headless_cli"; do
    [ -x "$cli" ] || { echo "compare-builds: $cli: no such executable (build it first)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-compare.XXXXXX")
[ "${KEEP:-0}" = 1 ] && echo "compare-builds: work folder $work" || trap 'rm -rf "$work"' EXIT INT TERM
samples=$repo/resources/samples

# run SIDE CLI NAME ARGS...: attnscope-cli ARGS in $work/SIDE, stdout to NAME.out, stderr to NAME.err.
run() {
    side=$1 cli=$2 name=$3
    shift 3
    mkdir -p "$work/$side"
    if ! (cd "$work/$side" && "$cli" "$@" >"$name.out" 2>"$name.err"); then
        echo "compare-builds: $side: attnscope-cli $* failed:" >&2
        sed 's/^/  /' "$work/$side/$name.err" >&2
        exit 2
    fi
}
for side in qt headless; do
    [ $side = qt ] && cli=$qt_cli || cli=$headless_cli
    echo "compare-builds: running the $side build's attnscope-cli"
    run $side "$cli" info info builtin:fmnist-vit --json
    run $side "$cli" make-run analyze --model builtin:fmnist-vit --images "$samples/fashion-mnist" \
        --out make-run --neutreno 0.6 --formats png,svg,pdf
    run $side "$cli" full analyze --model builtin:fmnist-vit --compare builtin:fmnist-quadratic \
        --images "$samples/fashion-mnist" "$samples/photos" \
        --analyses similarity,attention,centres,snr,decomposition --noise gaussian:sigma=8 --neutreno 0.6 --dump-tensors \
        --seed 3 --formats png --out full
    run $side "$cli" shard1 analyze --model builtin:fmnist-vit --images "$samples/fashion-mnist" --noise gaussian:sigma=8 \
        --shard 1/2 --formats png --out shard1
    run $side "$cli" shard2 analyze --model builtin:fmnist-vit --images "$samples/fashion-mnist" --noise gaussian:sigma=8 \
        --shard 2/2 --formats png --out shard2
    run $side "$cli" merged merge shard1 shard2 --formats png --out merged
    mv "$work/$side/info.out" "$work/$side/info.json"
done

# manifest.json without its top-level "timings" and "figures" (nlohmann's dump(2): keys at two spaces).
strip_manifest() {
    awk 'skip && /^  []}],?$/ { skip = 0; next }
         skip { next }
         /^  "(timings|figures)": / { if ($0 ~ /[[{]$/) skip = 1; next }
         { print }' "$1"
}

status=0
differ() { echo "DIFFERS: $*"; status=1; }
data_files() { (cd "$1" && find . -type f \( -name '*.csv' -o -name '*.json' -o -name '*.npy' \) | sed 's|^\./||' | sort); }
data_files "$work/qt" >"$work/qt.list"
data_files "$work/headless" >"$work/headless.list"
comm -23 "$work/qt.list" "$work/headless.list" | while read -r f; do echo "DIFFERS: $f: written by the Qt build only"; done
comm -13 "$work/qt.list" "$work/headless.list" | while read -r f; do echo "DIFFERS: $f: written by the headless build only"; done
cmp -s "$work/qt.list" "$work/headless.list" || status=1
compared=0
for f in $(comm -12 "$work/qt.list" "$work/headless.list"); do
    a=$work/qt/$f b=$work/headless/$f
    compared=$((compared + 1))
    case "$f" in
        */manifest.json)
            strip_manifest "$a" >"$work/a.json"
            strip_manifest "$b" >"$work/b.json"
            if ! cmp -s "$work/a.json" "$work/b.json"; then
                differ "$f (timings and figures aside):"
                diff "$work/a.json" "$work/b.json" | head -n 20 | sed 's/^/  /'
            fi ;;
        *.npy)
            cmp -s "$a" "$b" || differ "$f: $(cmp "$a" "$b" 2>&1 | head -n 1)" ;;
        *)
            if ! cmp -s "$a" "$b"; then
                differ "$f:"
                diff "$a" "$b" | head -n 20 | sed 's/^/  /'
            fi ;;
    esac
done
pictures=$(find "$work/headless" -type f \( -name '*.png' -o -name '*.svg' -o -name '*.pdf' \) | wc -l)
[ "$pictures" -eq 0 ] || differ "the headless build drew $pictures pictures"
drawn=$(find "$work/qt" -type f \( -name '*.png' -o -name '*.svg' -o -name '*.pdf' \) | wc -l)
[ "$drawn" -gt 0 ] || differ "the Qt build drew no picture: is $1 a build with ATTNSCOPE_GUI=OFF?"
for name in make-run full shard1 shard2 merged; do
    lines=$(grep -c 'figures need the Qt build' "$work/headless/$name.err")
    [ "$lines" -eq 1 ] || differ "headless $name: $lines lines on stderr saying figures need the Qt build (1 expected)"
done
if [ $status -eq 0 ]; then
    echo "compare-builds: $compared data files (CSV, JSON, NPY) identical between $1 and $2; the Qt build drew $drawn pictures, the headless build none"
else
    echo "compare-builds: the builds differ (above); $compared data files compared"
fi
exit $status
