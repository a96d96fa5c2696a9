#!/usr/bin/env python3
"""Each folder includes only the layers its CMake library links.

The allow-list is CMakeLists.txt itself: every `stockade_layer(NAME FOLDER
[LAYER...])` line names a folder and the layers it may use, and the same line
makes the library link exactly those. A source file that includes a header of
a folder its library does not reach (directly or through the layers it names)
fails here, so the include graph cannot drift from the link graph, and the
layers stay acyclic (a cycle would need a folder to name one above it).

    python3 tests/layout/includes.py SOURCE_DIR
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
cmake = open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8").read()

layers = {}  # name -> (folder, [direct deps])
for m in re.finditer(r"^stockade_layer\(([^)]*)\)", cmake, re.M):
    words = m.group(1).split()
    layers[words[0]] = (words[1], words[2:])
# The generated default filter (seccomp/default_program.h) is a library of
# its own above seccomp/, made by a tool that links seccomp/: the layers that
# name seccomp_default may include that one header.
failures = []
if len(layers) < 12:
    failures.append(f"only {len(layers)} stockade_layer lines found in CMakeLists.txt")

order = list(layers)  # as declared: a layer may name only layers above it in the file
for name, (folder, deps) in layers.items():
    for d in deps:
        if d not in layers and d != "seccomp_default":
            failures.append(f"layer {name} names unknown layer {d}")
        elif d in layers and order.index(d) >= order.index(name):
            failures.append(f"layer {name} names {d}, declared after it (a cycle waiting to happen)")


def reach(name, seen=None):
    seen = set() if seen is None else seen
    if name in seen:
        return seen
    seen.add(name)
    deps = layers[name][1] if name in layers else ["seccomp"]
    for d in deps:
        reach(d, seen)
    return seen


folder_of = {}
for name, (folder, _) in layers.items():
    folder_of[folder] = name
allowed_folders = {}
for name, (folder, _) in layers.items():
    names = reach(name)
    allowed_folders[folder] = {layers[n][0] for n in names if n in layers}
    if "seccomp_default" in names:
        allowed_folders[folder].add("seccomp_default")

include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
checked = 0
for folder in allowed_folders:
    path = os.path.join(root, folder)
    for file in sorted(os.listdir(path)):
        if not file.endswith((".cpp", ".h", ".c")):
            continue
        checked += 1
        text = open(os.path.join(path, file), encoding="utf-8").read()
        for header in include.findall(text):
            target = os.path.dirname(header)
            if header == "seccomp/default_program.h":
                target = "seccomp_default"
            if target not in folder_of and target != "seccomp_default":
                failures.append(f"{folder}/{file}: includes {header}, of no layer")
            elif target not in allowed_folders[folder]:
                failures.append(f"{folder}/{file}: includes {header}, but layer "
                                f"{folder_of[folder]} does not link {target}'s")
if checked < 150:
    failures.append(f"only {checked} source files checked")
for f in failures:
    print("FAIL", f)
if failures:
    sys.exit(1)
print(f"layers: {len(layers)} folders, {checked} files, every include within its layer's links")
