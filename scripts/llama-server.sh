#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` and a tiny test model into a cache folder, once per pinned version.
#
# Neither npm package ships the server: `node-llama-cpp` ships llama.cpp's whole source as a git bundle
# (llama/gitRelease.bundle) and `@node-llama-cpp/linux-x64` the prebuilt libllama, libggml* and
# libllama-common of the same commit. Only the server's own sources (tools/server, tools/mtmd, the vendored
# cpp-httplib) are compiled here and linked to those libraries: minutes on 2 cores, where a full build of
# llama.cpp takes far longer. The packages go to the cache folder with --ignore-scripts (node-llama-cpp's
# postinstall would download or build its own binaries), never to the project's node_modules: `npm ci`
# knows nothing of them.
#
# The model: random weights around a real tokenizer (llama.cpp's models/ggml-vocab-llama-spm.gguf, 32,000
# tokens) and a chat template with tools, written by llama.cpp's gguf-py with numpy (Debian's
# python3-numpy). Its text is noise; its protocol is real.
#
# Prints the cache folder on its last line. Needs: npm, git, g++, python3 with numpy.
# Settings (environment): LLAMA_SERVER_CACHE (default ~/.cache/tollgate/llama-server-<version>),
# LLAMA_SERVER_JOBS (parallel compilations, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.21.1
cache=${LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tollgate/llama-server-$version}
jobs=${LLAMA_SERVER_JOBS:-2}
server=$cache/bin/llama-server
# Named for the script that writes it: a changed model script writes a new model.
model=$cache/models/tiny-$(sha256sum scripts/llama-tiny-model.py | cut -c1-12).gguf

if [ -x "$server" ] && [ -f "$model" ]; then
  echo "llama-server $version: cached"
  echo "$cache"
  exit 0
fi

for tool in npm git g++ python3 make; do
  command -v "$tool" >/dev/null 2>&1 || { echo "llama-server: $tool is missing" >&2; exit 2; }
done
python3 -c 'import numpy' 2>/dev/null || { echo "llama-server: python3's numpy is missing (python3-numpy)" >&2; exit 2; }

mkdir -p "$cache"
npm_prefix=$cache/npm
if [ ! -f "$npm_prefix/node_modules/@node-llama-cpp/linux-x64/package.json" ]; then
  npm install --no-audit --no-fund --ignore-scripts --no-save --prefix "$npm_prefix" \
    "node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" >/dev/null
fi
bundle=$npm_prefix/node_modules/node-llama-cpp/llama/gitRelease.bundle
libs=$npm_prefix/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64

src=$cache/src
if [ ! -f "$src/tools/server/server.cpp" ]; then
  rm -rf "$src"
  git clone -q "$bundle" "$src" 2>/dev/null
fi

# The prebuilt libraries, next to the server (its rpath is $ORIGIN); the CPU variants are loaded by
# libggml at run time from the same folder.
mkdir -p "$cache/bin" "$cache/obj/ui"
cp -f "$libs"/*.so "$cache/bin/"

# The web UI is left out: its generator, run without an assets folder, writes an empty asset table.
g++ -O1 -std=c++17 -o "$cache/obj/ui/embed" "$src/tools/ui/embed.cpp"
"$cache/obj/ui/embed" "$cache/obj/ui/ui.cpp" "$cache/obj/ui/ui.h" >/dev/null

# The sources of CMake's mtmd, llama-server and vendor-hash targets (vendor/hash/CMakeLists.txt: hash.cpp, sha256.c).
mtmd_sources=$(cd "$src" && ls tools/mtmd/mtmd.cpp tools/mtmd/mtmd-audio.cpp tools/mtmd/mtmd-image.cpp \
  tools/mtmd/mtmd-helper.cpp tools/mtmd/mtmd-helper-gen.cpp tools/mtmd/clip.cpp tools/mtmd/models/*.cpp)
server_sources=$(cd "$src" && ls tools/server/*.cpp)
cat >"$cache/obj/Makefile" <<EOF
SRC := $src
CXXFLAGS := -O2 -std=c++17 -fPIC -pthread -DLLAMA_SHARED -DNDEBUG \\
  -DCPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH=1048576 -DCPPHTTPLIB_LISTEN_BACKLOG=512 \\
  -DCPPHTTPLIB_REQUEST_URI_MAX_LENGTH=32768 -DCPPHTTPLIB_TCP_NODELAY=1 \\
  -I\$(SRC)/include -I\$(SRC)/ggml/include -I\$(SRC)/common -I\$(SRC)/vendor -I\$(SRC)/tools/mtmd \\
  -I\$(SRC)/tools/server -I\$(SRC) -I\$(SRC)/vendor/hash -I$cache/obj/ui
CFLAGS := -O2 -fPIC -w -I\$(SRC)/vendor/hash
OBJS := $(for f in $mtmd_sources $server_sources vendor/cpp-httplib/httplib.cpp vendor/hash/hash.cpp; do printf 'o/%s ' "${f%.cpp}.o"; done) o/vendor/hash/sha256/sha256.o ui/ui.o
o/%.o: \$(SRC)/%.cpp
	@mkdir -p \$(dir \$@)
	\$(CXX) \$(CXXFLAGS) -c \$< -o \$@
o/%.o: \$(SRC)/%.c
	@mkdir -p \$(dir \$@)
	\$(CC) \$(CFLAGS) -c \$< -o \$@
ui/ui.o: ui/ui.cpp
	\$(CXX) \$(CXXFLAGS) -c \$< -o \$@
$server: \$(OBJS)
	\$(CXX) -pthread -o \$@ \$(OBJS) -L$cache/bin -l:libllama-common.so -l:libllama.v0.4.0.so \\
	  -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,'\$\$ORIGIN'
EOF
started=$(date +%s)
nice make -s -C "$cache/obj" -j"$jobs" "$server"
echo "llama-server $version: compiled in $(($(date +%s) - started)) s"

mkdir -p "$cache/models"
PYTHONPATH=$src/gguf-py python3 scripts/llama-tiny-model.py "$src/models/ggml-vocab-llama-spm.gguf" "$model.tmp"
mv "$model.tmp" "$model"
echo "$cache"
