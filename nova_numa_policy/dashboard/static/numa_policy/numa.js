/* Draws the host history charts as SVG from the JSON that charts.py
 * renders into #numa-chart-data: "line" charts of [time, value] points and
 * "bars" charts of per-bucket counts stacked by outcome. No library: the
 * panel must work without a CDN or an extra xstatic package. */
(function () {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';
  var W = 360, H = 160, PAD = {left: 44, right: 8, top: 8, bottom: 20};

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function text(parent, x, y, value, anchor) {
    var t = el('text', {x: x, y: y, 'text-anchor': anchor || 'start'}, parent);
    t.textContent = value;
    return t;
  }

  function scale(min, max, from, to) {
    var span = (max - min) || 1;
    return function (v) { return from + (v - min) / span * (to - from); };
  }

  function timeLabel(seconds) {
    return new Date(seconds * 1000).toISOString().substr(11, 5);
  }

  function frame(svg, xs, yMax, unit) {
    var bottom = H - PAD.bottom;
    el('line', {x1: PAD.left, y1: bottom, x2: W - PAD.right, y2: bottom,
                'class': 'numa-axis'}, svg);
    el('line', {x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: bottom,
                'class': 'numa-axis'}, svg);
    text(svg, PAD.left - 4, PAD.top + 8, unit ? yMax + ' ' + unit : String(yMax), 'end');
    text(svg, PAD.left - 4, bottom, '0', 'end');
    text(svg, PAD.left, H - 4, timeLabel(xs[0]) + ' UTC');
    text(svg, W - PAD.right, H - 4, timeLabel(xs[xs.length - 1]), 'end');
  }

  function drawLine(svg, chart) {
    var xs = chart.points.map(function (p) { return p[0]; });
    var yMax = Math.max.apply(null, chart.points.map(function (p) { return p[1]; })) || 1;
    var x = scale(xs[0], xs[xs.length - 1], PAD.left, W - PAD.right);
    var y = scale(0, yMax, H - PAD.bottom, PAD.top);
    frame(svg, xs, Math.round(yMax * 100) / 100, chart.unit);
    el('polyline', {'class': 'numa-line', points: chart.points.map(function (p) {
      return x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1);
    }).join(' ')}, svg);
  }

  function total(bucket) {
    return Object.keys(bucket.counts).reduce(function (s, k) { return s + bucket.counts[k]; }, 0);
  }

  function drawBars(svg, chart) {
    var xs = chart.buckets.map(function (b) { return b.t; });
    var yMax = Math.max.apply(null, chart.buckets.map(total)) || 1;
    var y = scale(0, yMax, 0, H - PAD.bottom - PAD.top);
    var width = (W - PAD.left - PAD.right) / chart.buckets.length;
    frame(svg, xs, yMax, chart.unit);
    chart.buckets.forEach(function (bucket, i) {
      var top = H - PAD.bottom;
      chart.outcomes.forEach(function (outcome) {
        var h = y(bucket.counts[outcome] || 0);
        if (!h) { return; }
        top -= h;
        el('rect', {x: PAD.left + i * width + 1, y: top, width: Math.max(width - 2, 1),
                    height: h, 'class': 'numa-out-' + outcome,
                    'data-outcome': outcome}, svg);
      });
    });
  }

  function draw(container, chart) {
    var box = document.createElement('div');
    box.className = 'numa-chart';
    box.setAttribute('data-kind', chart.kind);
    var title = document.createElement('h5');
    title.textContent = chart.title;
    box.appendChild(title);
    var svg = el('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H}, box);
    var empty = chart.kind === 'line' ? chart.points.length < 2 : !chart.buckets.length;
    if (empty) {
      text(svg, W / 2, H / 2, 'not enough history yet', 'middle').setAttribute('class', 'numa-empty');
    } else if (chart.kind === 'line') {
      drawLine(svg, chart);
    } else {
      drawBars(svg, chart);
    }
    container.appendChild(box);
  }

  function init() {
    var data = document.getElementById('numa-chart-data');
    var container = document.getElementById('numa-charts');
    if (!data || !container) { return; }
    JSON.parse(data.textContent).forEach(function (chart) { draw(container, chart); });
    container.setAttribute('data-drawn', 'true');
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', init);
  } else {
    init();
  }
}());
