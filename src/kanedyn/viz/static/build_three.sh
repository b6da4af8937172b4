#!/bin/sh
# Rebuilds three.kanedyn.min.js, the part of three.js (MIT, see LICENSE.three.txt) that
# report.html embeds, from the npm registry's packages. Run from this folder:
#   sh build_three.sh
# It needs node and npm; the result is committed, so users and CI never run this.
set -eu
THREE=0.187.0
ESBUILD=0.28.2
work=$(mktemp -d)
cp three_entry.js "$work/entry.js"
(cd "$work" && npm init -y >/dev/null && \
 npm install --no-audit --no-fund --silent "three@$THREE" "esbuild@$ESBUILD" && \
 ./node_modules/.bin/esbuild entry.js --bundle --minify --format=iife --global-name=THREE \
   --legal-comments=none --target=es2019 --outfile=three.kanedyn.min.js && \
 cp node_modules/three/LICENSE LICENSE.three.txt)
{ printf '/* three.js r%s (npm three@%s), MIT License, see LICENSE.three.txt; bundled by build_three.sh */\n' \
    "${THREE#0.}" "$THREE" | sed 's/\.0 (/ (/'; cat "$work/three.kanedyn.min.js"; } > three.kanedyn.min.js
cp "$work/LICENSE.three.txt" LICENSE.three.txt
rm -rf "$work"
