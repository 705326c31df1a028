#!/usr/bin/env python3
"""The folders' include graph points down only (docs/contributing.md section 1).

Every #include "..." and #include <...> of engine/src, engine/include, widgets/, report/, app/ and python/src is
resolved to the file it names, and the file to its folder. An include goes to the includer's own folder or to a folder
on a lower level of LEVELS; folders on one level are siblings and never include each other. An engine public header
(engine/include/attnscope/X.h) belongs to the folder of engine/src whose X.cpp defines it, or to the one HEADER_ONLY
names, so that a header declaring what a folder above defines shows up as that folder reaching up.

    python3 scripts/check-layering.py [repository root]

Prints every include that goes up or sideways, and the counts; exits 1 when there is one, or when a header of widgets/
or app/ is included without its folder. Includes that name no file of the repository (the standard library, Qt,
LibTorch) are not followed.
"""

import os
import re
import sys

# Lowest first. The engine: files and errors, then checkpoints and their configs, images and their preprocessing,
# the ViT and its forward, the analyses, training. The widgets: the window's files and the worker, then the plots
# (style, colour maps, the attention overlay, the QCustomPlot builders), the figures drawn from them, the window's
# views that show them. Then the report tier, the remote engine (its wire format, server and client), and the
# executables and the Python module on top.
LEVELS = [
    ["engine/io"],
    ["engine/checkpoint"],
    ["engine/image"],
    ["engine/vit"],
    ["engine/analyses"],
    ["engine/train"],
    ["widgets/io", "widgets/worker"],
    ["widgets/plots"],
    ["widgets/figures"],
    ["widgets/view"],
    ["report"],
    ["remote"],
    ["app/cli", "app/gui", "app/train", "python"],
]
# Lower, and still never: the Python module is built without Qt.
NEVER = [("python", "widgets/")]
# Public headers with no .cpp of their own name, and the folder that defines what they declare.
HEADER_ONLY = {"Result.h": "engine/io", "CpuKernels.h": "engine/vit", "LogitDecompositionInfo.h": "engine/analyses"}

SCANNED = ["engine/src", "engine/include", "widgets", "report", "remote", "app", "python/src"]
# Where an include is looked for after the includer's own folder, as the targets' include paths have it (engine/src
# is the engine's private root; widgets/ and app/ give their headers by folder, report/ by name). The widgets'
# folders themselves are searched too, so that a bare "Colormap.h" of the old layout is still resolved and counted.
INCLUDE_ROOTS = ["engine/src", "engine/include", "widgets", "report", "remote", "app", "python/src",
                 "widgets/view", "widgets/plots", "widgets/figures", "widgets/worker", "widgets/io", "app/gui", "app/cli"]
# Tiers whose headers are included by their folder ("plots/Colormap.h", "gui/MainWindow.h"), their own files too.
BY_FOLDER = ("widgets", "app")
SUFFIXES = (".h", ".hpp", ".cpp", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def folder_of(path, owners):
    """The folder of a repository-relative path, as LEVELS names it (None: not a layered folder)."""
    parts = path.split("/")
    if parts[:3] == ["engine", "include", "attnscope"]:
        return owners.get(parts[-1])
    if parts[:2] == ["engine", "src"] and len(parts) > 3:
        return "engine/" + parts[2]
    if parts[0] in ("widgets", "app") and len(parts) > 2:
        return parts[0] + "/" + parts[1]
    if parts[0] == "report":
        return "report"
    if parts[:2] == ["python", "src"]:
        return "python"
    return None


def public_header_owners(root):
    """engine/include/attnscope/X.h -> the engine/src folder holding X.cpp (or HEADER_ONLY's)."""
    defined = {}
    for dirpath, _, files in os.walk(os.path.join(root, "engine/src")):
        for name in files:
            if name.endswith(".cpp"):
                folder = os.path.relpath(dirpath, os.path.join(root, "engine/src")).split(os.sep)[0]
                defined.setdefault(name[:-4] + ".h", "engine/" + folder)
    owners = {}
    for name in os.listdir(os.path.join(root, "engine/include/attnscope")):
        if name.endswith(".h"):
            owners[name] = HEADER_ONLY.get(name, defined.get(name))
    return owners


def resolve(root, includer, name):
    """The repository-relative file `name` refers to from `includer`, or None."""
    candidates = [os.path.dirname(includer)] + INCLUDE_ROOTS
    for base in candidates:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, path)):
            return path
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    rank = {folder: level for level, folders in enumerate(LEVELS) for folder in folders}
    owners = public_header_owners(root)
    problems = []
    unowned = sorted(name for name, owner in owners.items() if owner is None)
    for name in unowned:
        problems.append(f"engine/include/attnscope/{name}: no engine/src folder defines it (add it to HEADER_ONLY)")

    edges = 0
    bad = []
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for file in sorted(files):
                if not file.endswith(SUFFIXES):
                    continue
                includer = os.path.relpath(os.path.join(dirpath, file), root)
                source = folder_of(includer, owners)
                if source is None:
                    continue
                if source not in rank:
                    problems.append(f"{includer}: folder {source} is on no level of LEVELS")
                    continue
                with open(os.path.join(root, includer), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target_path = resolve(root, includer, m.group(1))
                        if target_path is None:
                            continue
                        tier = target_path.split("/")[0]
                        if tier in BY_FOLDER and m.group(1) != target_path[len(tier) + 1:]:
                            problems.append(f"{includer}:{number}: #include {m.group(1)} says no folder "
                                            f"({target_path[len(tier) + 1:]})")
                        target = folder_of(target_path, owners)
                        if target is None or target == source:
                            continue
                        edges += 1
                        if target not in rank:
                            problems.append(f"{target_path}: folder {target} is on no level of LEVELS")
                            continue
                        never = any(source == s and target.startswith(t) for s, t in NEVER)
                        if rank[target] >= rank[source] or never:
                            how = "never" if never else ("sideways" if rank[target] == rank[source] else "up")
                            bad.append((source, target, f"{includer}:{number}: {source} -> {target} ({how}): "
                                                        f"#include {m.group(1)} ({target_path})"))

    for _, _, text in sorted(bad):
        print(text)
    for text in problems:
        print(text)
    arrows = sorted({(s, t) for s, t, _ in bad})
    for s, t in arrows:
        print(f"arrow against the order: {s} -> {t}")
    print(f"layering: {edges} includes between folders, {len(bad)} against the order "
          f"({len(arrows)} folder arrows), {len(problems)} other problems")
    return 1 if bad or problems else 0


if __name__ == "__main__":
    sys.exit(main())
