/* Draw every chart from its JSON spec; the one-line fallback stays if plotting fails.
   plotly.js comes gzip'd in base64 (#plotly-js: 0.59 MB of page instead of 1.32 MB); the browser
   inflates it (DecompressionStream) and runs it before the charts are drawn. A browser without
   DecompressionStream keeps every chart's one-line fallback, as a reader without JavaScript does.
   Charts inside a closed <details> are drawn when it opens (plotly cannot size a hidden chart).
   Charts whose spec says "linkedTimeAxis" share one time axis: zooming or panning one moves all. */
(function () {
  function loadPlotly() {
    if (typeof Plotly !== "undefined") { return Promise.resolve(); }
    var packed = document.getElementById("plotly-js");
    if (!packed || typeof DecompressionStream === "undefined" || typeof Response === "undefined") {
      return Promise.reject(new Error("this browser cannot inflate the page's plotly.js"));
    }
    var text = atob(packed.textContent.trim());
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(function (code) {
      var script = document.createElement("script");
      script.textContent = code;
      document.head.appendChild(script);  // runs now: Plotly is defined below
      packed.parentNode.removeChild(packed);
    });
  }

  loadPlotly().then(drawCharts, function (err) {
    if (window.console) { console.warn("charts not drawn: " + err); }
  });

  function drawCharts() {
  if (typeof Plotly === "undefined") { return; }
  document.documentElement.classList.add("js");  // shows the hints about interactive charts
  var linked = [];          // drawn chart divs on the page's linked time axis
  var linkedRange = null;   // the range they show now (null: each chart's own initial range)
  var broadcasting = false;

  function rangeOf(event) {
    if (event["xaxis.autorange"]) { return "reset"; }
    if (event["xaxis.range[0]"] !== undefined) { return [event["xaxis.range[0]"], event["xaxis.range[1]"]]; }
    if (event["xaxis.range"]) { return event["xaxis.range"].slice(); }
    return null;
  }

  function applyRange(range, except) {
    broadcasting = true;
    var jobs = linked.filter(function (gd) { return gd !== except; }).map(function (gd) {
      var target = range === "reset" ? gd._initialRange.slice() : range;
      return Plotly.relayout(gd, {"xaxis.range": target, "xaxis.autorange": false});
    });
    return Promise.all(jobs).then(function () { broadcasting = false; }, function () { broadcasting = false; });
  }

  function onRelayout(gd) {
    return function (event) {
      if (broadcasting) { return; }
      var range = rangeOf(event);
      if (!range) { return; }
      if (range === "reset") {  // double-click: the whole job again, on every chart
        linkedRange = null;
        applyRange("reset", null);
      } else {
        linkedRange = range;
        applyRange(range, gd);
      }
    };
  }

  function resetButton(figure) {
    var section = figure.closest("section") || document.body;
    if (section.querySelector(".reset-time")) { return; }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "reset-time";
    button.textContent = "Reset time range";
    button.addEventListener("click", function () { linkedRange = null; applyRange("reset", null); });
    var anchor = figure.closest(".chart-row") || figure;
    anchor.parentNode.insertBefore(button, anchor);
  }

  // Attributes repeated across the page's charts are listed once (#chart-parts, reportgen.render.chart_parts):
  // a trace or layout with "$parts": i gets list item i's attributes back, a fresh copy for each chart (plotly
  // changes a layout as it is zoomed), before anything else reads the spec.
  var partsNode = document.getElementById("chart-parts");
  var partTexts = partsNode ? JSON.parse(partsNode.textContent).map(function (p) { return JSON.stringify(p); }) : [];
  function withParts(spec) {
    (spec.data || []).concat(spec.layout ? [spec.layout] : []).forEach(function (obj) {
      if (!obj || obj["$parts"] === undefined) { return; }
      var part = JSON.parse(partTexts[obj["$parts"]]);
      delete obj["$parts"];
      Object.keys(part).forEach(function (key) { if (!(key in obj)) { obj[key] = part[key]; } });
    });
    return spec;
  }

  // A line's values held as whole hundredths (tenths) in a u1/u2 typed array carry "decimals"
  // (reportgen.report.charts.float_array): divided back here, q / 10^decimals, before plotly sees them.
  function fixedPoint(spec) {
    var sizes = {u1: 1, u2: 2};
    (spec.data || []).forEach(function (trace) {
      ["x", "y", "z"].forEach(function (key) {
        var packed = trace[key];
        if (!packed || typeof packed !== "object" || !packed.decimals || !sizes[packed.dtype]) { return; }
        var text = atob(packed.bdata), size = sizes[packed.dtype], scale = Math.pow(10, packed.decimals);
        var values = new Float64Array(text.length / size);
        for (var i = 0; i < values.length; i++) {
          var q = text.charCodeAt(i * size) + (size === 2 ? text.charCodeAt(i * size + 1) * 256 : 0);
          values[i] = q / scale;  // little-endian, as plotly.js's own typed arrays
        }
        trace[key] = values;
      });
    });
    return spec;
  }

  function draw(figure) {
    if (figure.getAttribute("data-drawn")) { return; }
    var specNode = figure.querySelector("script.chart-spec");
    if (!specNode) { return; }
    figure.setAttribute("data-drawn", "pending");
    try {
      var spec = fixedPoint(withParts(JSON.parse(specNode.textContent)));
      var canvas = document.createElement("div");
      canvas.className = "chart-canvas";
      figure.appendChild(canvas);
      var isLinked = !!spec.linkedTimeAxis;
      var own = spec.layout.xaxis && spec.layout.xaxis.range ? spec.layout.xaxis.range.slice() : null;
      if (isLinked && linkedRange) { spec.layout.xaxis = Object.assign({}, spec.layout.xaxis, {range: linkedRange}); }
      Plotly.newPlot(canvas, spec.data, spec.layout, {
        responsive: true, displaylogo: false, showLink: false, showSendToCloud: false
      }).then(function (gd) {
        Array.prototype.forEach.call(figure.querySelectorAll(".chart-fallback, .chart-static"), function (node) {
          node.parentNode.removeChild(node);  // the one-line note and the static picture (no scripts) give way
        });
        figure.setAttribute("data-drawn", "yes");
        if (isLinked) {
          gd._initialRange = (own || gd.layout.xaxis.range).slice();  // what "Reset time range" restores
          linked.push(gd);
          gd.on("plotly_relayout", onRelayout(gd));
          resetButton(figure);
        }
      });
    } catch (err) {
      if (window.console) { console.warn("chart " + figure.id + " could not be drawn: " + err); }
    }
  }

  function drawVisible(root) {
    Array.prototype.forEach.call(root.querySelectorAll("figure.chart"), function (figure) {
      var closed = figure.parentNode.closest("details:not([open])");
      if (!closed) { draw(figure); }
    });
  }

  drawVisible(document);
  Array.prototype.forEach.call(document.querySelectorAll("details"), function (details) {
    details.addEventListener("toggle", function () { if (details.open) { drawVisible(details); } });
  });

  // A link to a section inside a closed deep dive opens it.
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) { return; }
    var details = target.matches("details") ? target : target.querySelector(":scope > details");
    for (var node = details || target; node; node = node.parentNode && node.parentNode.closest ? node.parentNode.closest("details") : null) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();

  // Printing expands every deep dive (and puts them back afterwards).
  var closedBeforePrint = [];
  window.addEventListener("beforeprint", function () {
    closedBeforePrint = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
    closedBeforePrint.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    closedBeforePrint.forEach(function (d) { d.open = false; });
    closedBeforePrint = [];
  });
  document.documentElement.setAttribute("data-charts", "ready");  // for whoever waits on the charts (tests)
  }
})();
