#!/usr/bin/env bash
# Build reportgen/vendor/plotly-reportgen.min.js.gz: plotly.js with only the trace types the report draws
# (scatter, bar, box, heatmap, pie; reportgen.resources.PLOTLY_TRACES), from the npm package of the
# version plotly.py bundles, with the esbuild settings of plotly.js's own build (esbuild-config.js:
# IIFE named Plotly, es2016, CSS inlined, NODE_DEBUG false). Needs node and npm (the npm registry);
# everything is installed into a throwaway folder. See reportgen/vendor/README.md.
#   bash scripts/build_plotly.sh [VERSION]     (default: the version in reportgen/vendor/README.md)
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-4.1.1}"
out="$PWD/reportgen/vendor/plotly-reportgen.min.js.gz"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo '{"name": "reportgen-plotly-build", "version": "1.0.0", "private": true}' > package.json
npm install --no-audit --no-fund --ignore-scripts --silent "plotly.js@$version" esbuild@0.28 \
  esbuild-plugin-environment@0.5 esbuild-plugin-inline-css@0.0.1 >&2
cat > entry.js <<'JS'
'use strict';
// The report's trace types only (reportgen.resources.PLOTLY_TRACES); no calendars, no WebGL traces.
var Plotly = require('plotly.js/lib/core');
Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/box'),
    require('plotly.js/lib/heatmap'),
    require('plotly.js/lib/pie'),
]);
module.exports = Plotly;
JS
cat > build.js <<'JS'
const esbuild = require('esbuild');
const { environmentPlugin } = require('esbuild-plugin-environment');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');
const version = require('plotly.js/package.json').version;
esbuild.build({
    entryPoints: ['entry.js'], outfile: 'plotly-reportgen.min.js',
    format: 'iife', globalName: 'Plotly', bundle: true, minify: true, sourcemap: false, legalComments: 'none',
    plugins: [InlineCSSPlugin(), environmentPlugin({ NODE_DEBUG: false })],
    alias: { stream: 'stream-browserify' },
    define: { global: 'window', 'define.amd': 'false' },
    target: 'es2016', logLevel: 'warning',
    banner: { js: '/**\n* plotly.js (reportgen: scatter, bar, box, heatmap, pie - minified) v' + version +
                  '\n* Copyright 2012-2026, Plotly, Inc.\n* All rights reserved.\n* Licensed under the MIT license\n*/' },
}).catch(() => process.exit(1));
JS
node build.js
# gzip'd (-n: no name or time stamp, so a rebuild is byte-identical): the page inlines it in base64 and
# the browser inflates it (DecompressionStream), 1.32 MB of JavaScript as ~0.58 MB of page
gzip -9 -n -c plotly-reportgen.min.js > "$out"
cp node_modules/plotly.js/LICENSE "$(dirname "$out")/plotly-LICENSE"
echo "wrote $out ($(wc -c < "$out") bytes, $(wc -c < plotly-reportgen.min.js) inflated; plotly.js $version)" >&2
