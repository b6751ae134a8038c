/* Draw every chart from its JSON spec; the one-line fallback stays if plotting fails. */
(function () {
  if (typeof Plotly === "undefined") { return; }
  var figures = document.querySelectorAll("figure.chart");
  Array.prototype.forEach.call(figures, function (figure) {
    var specNode = figure.querySelector("script.chart-spec");
    if (!specNode) { return; }
    try {
      var spec = JSON.parse(specNode.textContent);
      var canvas = document.createElement("div");
      canvas.className = "chart-canvas";
      figure.appendChild(canvas);
      Plotly.newPlot(canvas, spec.data, spec.layout, {
        responsive: true, displaylogo: false, showLink: false, showSendToCloud: false
      }).then(function () {
        var fallback = figure.querySelector(".chart-fallback");
        if (fallback) { fallback.parentNode.removeChild(fallback); }
      });
    } catch (err) {
      if (window.console) { console.warn("chart " + figure.id + " could not be drawn: " + err); }
    }
  });
})();
