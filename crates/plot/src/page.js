// loadlab plot: the run page's own script. The charts are already drawn (inline SVG from
// svg.rs); this adds hover values, zoom by drag on the shared time axis (every time chart
// follows, resource charts included; double-click zooms out) and log/linear switches. It
// redraws a chart's grid, ticks, gap bands, marks and diagnosis markers from the chart
// data (JSON) by the same rules as format.rs, axis.rs and svg.rs; hovering a marker names
// it in the diagnosis's words. With #selftest in the URL it exercises all of that once
// and reports on <html>.
(function () {
  "use strict";
  var CHAR_WIDTH = 6.4, RIGHT = 20, MAX_TICKS = 10, HOVER_PX = 12, SHADES = 4, RATE_PARTS = 8, STEP_DOT = 6, LINK_RING = 4;
  // Marker labels (svg.rs marker_places): rows, row height, bold glyph width, gaps; and
  // how near the mouse must be to a marker's line to name it.
  var MARKER_ROWS = 3, MARKER_ROW_PX = 13, MARKER_CHAR_WIDTH = 6.8, MARKER_GAP_PX = 4, MARKER_HOVER_PX = 6;
  var TIME_STEPS_S = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15,
    30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
  var root = document.documentElement;
  var page = null; // the chart data (JSON), read by start()
  var charts = [];
  var view = null; // the zoomed time domain, or null for the whole run
  var tip = document.createElement("div");
  tip.className = "tip";
  tip.hidden = true;
  document.body.appendChild(tip);

  // ---- numbers (format.rs) ----
  function significant(value, digits) {
    if (value === 0 || !isFinite(value)) return "0";
    var magnitude = Math.floor(Math.log10(Math.abs(value)));
    var decimals = Math.min(9, Math.max(0, digits - 1 - magnitude));
    var text = value.toFixed(decimals);
    if (text.indexOf(".") >= 0) text = text.replace(/0+$/, "").replace(/\.$/, "");
    return text;
  }
  function minutesAndMore(seconds) {
    var parts = [[Math.floor(seconds / 86400), "d"], [Math.floor(seconds / 3600) % 24, "h"],
      [Math.floor(seconds / 60) % 60, "m"], [seconds % 60, "s"]];
    var first = 3;
    for (var i = 0; i < 4; i++) if (parts[i][0] > 0) { first = i; break; }
    return parts.slice(first, Math.min(first + 2, 4))
      .filter(function (p) { return p[0] > 0; })
      .map(function (p) { return p[0] + p[1]; }).join("");
  }
  function durationNs(ns) {
    if (!isFinite(ns)) return "-";
    if (ns === 0) return "0";
    var sign = ns < 0 ? "-" : "";
    ns = Math.abs(ns);
    var text;
    if (ns < 999.5) text = significant(ns, 3) + "ns";
    else if (ns < 999500) text = significant(ns / 1e3, 3) + "µs";
    else if (ns < 999500000) text = significant(ns / 1e6, 3) + "ms";
    else if (ns < 59.95e9) text = significant(ns / 1e9, 3) + "s";
    else text = minutesAndMore(Math.round(ns / 1e9));
    return sign + text;
  }
  function count(value) {
    if (!isFinite(value)) return "-";
    var m = Math.abs(value);
    if (m < 1e3) return significant(value, 3);
    if (m < 1e6) return significant(value / 1e3, 3) + "k";
    if (m < 1e9) return significant(value / 1e6, 3) + "M";
    return significant(value / 1e9, 3) + "G";
  }
  var BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  function bytes(value, digits) {
    if (!isFinite(value)) return "-";
    if (value === 0) return "0";
    var scaled = Math.abs(value), unit = 0;
    while (scaled >= 1023.5 && unit + 1 < BYTE_UNITS.length) { scaled /= 1024; unit++; }
    return (value < 0 ? "-" : "") + significant(scaled, digits) + " " + BYTE_UNITS[unit];
  }
  function isBinary(unit) { return unit === "bytes" || unit === "bytes_per_second"; }
  function valueText(unit, value) {
    if (unit === "duration") return durationNs(value);
    if (unit === "percent" || unit === "share") return significant(value, 3) + "%";
    if (unit === "bytes") return bytes(value, 3);
    if (unit === "bytes_per_second") return value === 0 ? "0" : bytes(value, 3) + "/s";
    return count(value);
  }
  function exactText(unit, value) {
    if (unit === "duration") return durationNs(value);
    if (unit === "percent" || unit === "share") return significant(value, 4) + "%";
    if (unit === "per_second") return significant(value, 4) + "/s";
    if (unit === "bytes") return bytes(value, 4);
    if (unit === "bytes_per_second") return bytes(value, 4) + "/s";
    if (unit === "number") return significant(value, 4);
    // Counts are whole; a load average is a count that is not.
    return Math.abs(value - Math.round(value)) < 1e-9 ? String(Math.round(value)) : significant(value, 4);
  }
  function ninesLabel(nines) {
    var whole = Math.round(nines);
    if (Math.abs(nines - whole) < 1e-9 && whole >= 3) {
      return "99." + new Array(whole - 1).join("9") + "%";
    }
    return significant(100 * (1 - Math.pow(10, -nines)), Math.floor(nines + 2)) + "%";
  }
  function wallClock(seconds) {
    var date = new Date(page.origin_ms + seconds * 1000);
    return isNaN(date.getTime()) ? "" : date.toISOString().replace("T", " ").replace("Z", " UTC");
  }

  // ---- axes (axis.rs) ----
  function niceStep(span, parts) {
    if (!(isFinite(span) && span > 0)) return 1;
    var raw = span / parts, power = Math.pow(10, Math.floor(Math.log10(raw)));
    var mantissa = raw / power;
    return (mantissa <= 1 ? 1 : mantissa <= 2 ? 2 : mantissa <= 5 ? 5 : 10) * power;
  }
  // Bytes step by powers of two (512 MiB, 1 GiB), from 1 KiB up (axis.rs binary_step).
  function stepFor(span, parts, binary) {
    if (!binary) return niceStep(span, parts);
    if (!(isFinite(span) && span > 0)) return 1;
    if (span < 1024) return niceStep(span, parts);
    return Math.pow(2, Math.ceil(Math.log2(span / parts)));
  }
  function stepBelow(value) {
    var decade = Math.pow(10, Math.floor(Math.log10(value)));
    var steps = [5, 2, 1];
    for (var i = 0; i < steps.length; i++) if (steps[i] * decade <= value * (1 + 1e-9)) return steps[i] * decade;
    return decade;
  }
  function stepAbove(value) {
    var decade = Math.pow(10, Math.floor(Math.log10(value)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * decade >= value * (1 - 1e-9)) return steps[i] * decade;
    return decade * 10;
  }
  function valueDomain(values, scale, binary) {
    var low = Infinity, high = -Infinity;
    for (var i = 0; i < values.length; i++) {
      var v = values[i];
      if (v === null || !isFinite(v) || (scale === "log" && v <= 0)) continue;
      if (v < low) low = v;
      if (v > high) high = v;
    }
    if (scale === "log") {
      if (!isFinite(high)) return { min: 1, max: 10 };
      if (binary) {
        var low2 = Math.pow(2, Math.floor(Math.log2(low)));
        return { min: low2, max: Math.max(Math.pow(2, Math.ceil(Math.log2(high * 1.05))), low2 * 2) };
      }
      var min = stepBelow(low), max = stepAbove(high);
      if (max <= min) max = stepAbove(min * 1.5);
      return { min: min, max: max };
    }
    high = isFinite(high) && high > 0 ? high * 1.05 : 1;
    var floor = isFinite(low) && low < 0 ? low : 0;
    var step = stepFor(high - floor, 5, binary);
    return { min: Math.floor(floor / step) * step, max: Math.ceil(high / step) * step };
  }
  function multiples(domain, step) {
    var first = Math.ceil(domain.min / step - 1e-9), last = Math.floor(domain.max / step + 1e-9);
    var ticks = [];
    for (var k = first; k <= last; k++) ticks.push(k * step);
    return ticks;
  }
  function linearTicks(domain, binary) { return multiples(domain, stepFor(domain.max - domain.min, 5, binary)); }
  function binaryLogTicks(domain) {
    var first = Math.ceil(Math.log2(domain.min)), last = Math.floor(Math.log2(domain.max));
    var strides = [1, 2, 5, 10, 20], stride = 20, ticks = [];
    for (var i = 0; i < strides.length; i++) if (Math.floor((last - first) / strides[i]) <= 7) { stride = strides[i]; break; }
    for (var e = first; e <= last; e++) if (((e % stride) + stride) % stride === 0) ticks.push(Math.pow(2, e));
    return ticks;
  }
  function logTicks(domain, binary) {
    if (binary) return binaryLogTicks(domain);
    var first = Math.floor(Math.log10(domain.min)), last = Math.ceil(Math.log10(domain.max));
    var steps = last - first <= 3 ? [1, 2, 5] : [1], ticks = [];
    for (var e = first; e <= last; e++) {
      for (var i = 0; i < steps.length; i++) {
        var tick = Math.pow(10, e) * steps[i];
        if (tick >= domain.min * (1 - 1e-9) && tick <= domain.max * (1 + 1e-9)) ticks.push(tick);
      }
    }
    return ticks;
  }
  function timeTicks(domain) {
    var span = domain.max - domain.min, step = null;
    for (var i = 0; i < TIME_STEPS_S.length; i++) if (span / TIME_STEPS_S[i] <= MAX_TICKS) { step = TIME_STEPS_S[i]; break; }
    return multiples(domain, step === null ? niceStep(span, MAX_TICKS) : step);
  }
  function ninesTicks(domain) { return multiples(domain, domain.max - domain.min > MAX_TICKS ? 2 : 1); }
  function rateTicks(domain) { return multiples(domain, niceStep(domain.max - domain.min, RATE_PARTS)); }

  // ---- drawing (svg.rs) ----
  function fraction(domain, scale, value) {
    if (scale === "log") {
      value = Math.max(value, domain.min);
      return (Math.log10(value) - Math.log10(domain.min)) / (Math.log10(domain.max) - Math.log10(domain.min));
    }
    return (value - domain.min) / (domain.max - domain.min);
  }
  function xPx(c, x) { return c.plot.x + fraction(c.xd, "linear", x) * c.plot.w; }
  function yPx(c, y) {
    var f = Math.min(1.02, Math.max(-0.02, fraction(c.yd, c.scale, y)));
    return c.plot.y + c.plot.h - f * c.plot.h;
  }
  function xValue(c, px) { return c.xd.min + (px - c.plot.x) / c.plot.w * (c.xd.max - c.xd.min); }
  function coord(v) {
    var tenths = Math.round(v * 10), sign = tenths < 0 ? "-" : "";
    tenths = Math.abs(tenths);
    return sign + Math.floor(tenths / 10) + (tenths % 10 ? "." + (tenths % 10) : "");
  }
  function escapeText(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }
  function isValue(v) { return v !== null && isFinite(v); }

  function stackedTops(c) {
    var tops = [], below = null;
    c.spec.series.forEach(function (s) {
      if (s.style !== "stacked") return;
      var top = s.y.map(function (y, i) { return (y === null ? NaN : y) + (below ? below[i] : 0); });
      tops.push(top);
      below = top;
    });
    return tops;
  }
  function visible(c, x) { return c.spec.x !== "time" || !view || (x >= view.min && x <= view.max); }
  function yDomain(c) {
    var values = [], tops = stackedTops(c), t = 0;
    c.spec.series.forEach(function (s) {
      var ys = s.style === "stacked" ? tops[t++] : s.y;
      for (var i = 0; i < ys.length; i++) if (visible(c, s.x[i])) values.push(ys[i]);
    });
    var domain = valueDomain(values, c.scale, isBinary(c.spec.unit));
    // A share ends at 100% (as axis::capped): no room drawn for what cannot be.
    var within = values.every(function (v) { return v === null || !isFinite(v) || v <= 100; });
    if (c.spec.unit === "share" && c.scale !== "log" && within && domain.max > 100) domain.max = 100;
    return domain;
  }
  function axisTicks(c) {
    var xs = c.spec.x === "time"
      ? timeTicks(c.xd).map(function (t) { return [t, durationNs(t * 1e9)]; })
      : c.spec.x === "rate"
        ? rateTicks(c.xd).map(function (r) { return [r, count(r)]; })
        : ninesTicks(c.xd).map(function (n) { return [n, ninesLabel(n)]; });
    var binary = isBinary(c.spec.unit);
    var ys = (c.scale === "log" ? logTicks(c.yd, binary) : linearTicks(c.yd, binary))
      .map(function (v) { return [v, valueText(c.spec.unit, v)]; });
    return { xs: xs, ys: ys };
  }
  function gridMarkup(c, ticks) {
    var p = c.plot, out = [];
    ticks.xs.forEach(function (t) {
      var x = xPx(c, t[0]).toFixed(1);
      out.push('<line x1="' + x + '" y1="' + p.y + '" x2="' + x + '" y2="' + (p.y + p.h) + '"/>');
    });
    ticks.ys.forEach(function (t) {
      var y = yPx(c, t[0]).toFixed(1);
      out.push('<line x1="' + p.x + '" y1="' + y + '" x2="' + (p.x + p.w) + '" y2="' + y + '"/>');
    });
    return out.join("");
  }
  function ticksMarkup(c, ticks) {
    var p = c.plot, out = [];
    ticks.xs.forEach(function (t) {
      var x = xPx(c, t[0]);
      var anchor = x + t[1].length * CHAR_WIDTH / 2 > p.x + p.w + RIGHT / 2 ? "end" : "middle";
      out.push('<text x="' + x.toFixed(1) + '" y="' + (p.y + p.h + 15) + '" text-anchor="' + anchor + '">' +
        escapeText(t[1]) + "</text>");
    });
    ticks.ys.forEach(function (t) {
      out.push('<text x="' + (p.x - 6) + '" y="' + (yPx(c, t[0]) + 4).toFixed(1) + '" text-anchor="end">' +
        escapeText(t[1]) + "</text>");
    });
    return out.join("");
  }
  // Dots, one path per shade: a downsampled series' dots are shaded by the log of how
  // many requests each stands for (Series::shade in model.rs).
  function shade(s, i, maxWeight) {
    if (!s.n || maxWeight <= 1) return SHADES - 1;
    return Math.min(SHADES - 1, Math.round(Math.log(Math.max(1, s.n[i])) / Math.log(maxWeight) * (SHADES - 1)));
  }
  function pointsPath(c, s) {
    var maxWeight = (s.n || [1]).reduce(function (a, b) { return Math.max(a, b); }, 1);
    var paths = [[], [], [], []];
    for (var i = 0; i < s.x.length; i++) {
      if (!isValue(s.y[i]) || !visible(c, s.x[i])) continue;
      paths[shade(s, i, maxWeight)].push("M" + coord(xPx(c, s.x[i])) + " " + coord(yPx(c, s.y[i])) + "h0");
    }
    var width = s.emphasis ? 3.6 : 3;
    var opacities = s.emphasis ? [0.45, 0.6, 0.75, 0.9] : [0.25, 0.4, 0.55, 0.75];
    return paths.map(function (d, k) {
      if (!d.length) return "";
      return '<path class="series" d="' + d.join("") + '" fill="none" stroke="' + s.color +
        '" stroke-opacity="' + opacities[k] + '" stroke-width="' + width + '" stroke-linecap="round"/>';
    }).join("");
  }
  function linePath(c, s) {
    var d = [], down = false;
    for (var i = 0; i < s.x.length; i++) {
      if (!isValue(s.y[i]) || !isValue(s.x[i])) { down = false; continue; }
      d.push((down ? "L" : "M") + coord(xPx(c, s.x[i])) + " " + coord(yPx(c, s.y[i])));
      if (!down && !(i + 1 < s.y.length && isValue(s.y[i + 1]))) d.push("h0");
      down = true;
    }
    var dash = s.style === "dashed" ? ' stroke-dasharray="6 4"' : "";
    return '<path class="series" d="' + d.join("") + '" fill="none" stroke="' + s.color +
      '" stroke-width="1.6" stroke-linejoin="round" stroke-linecap="round"' + dash + "/>";
  }
  // A dot per value on top of a line_points series' line (svg.rs step_dots).
  function stepDotsPath(c, s) {
    var d = [];
    for (var i = 0; i < s.x.length; i++) {
      if (isValue(s.y[i]) && isValue(s.x[i])) d.push("M" + coord(xPx(c, s.x[i])) + " " + coord(yPx(c, s.y[i])) + "h0");
    }
    return '<path class="series" d="' + d.join("") + '" fill="none" stroke="' + s.color +
      '" stroke-width="' + STEP_DOT + '" stroke-linecap="round"/>';
  }
  function areaPath(c, s, top, below) {
    var d = [], start = 0;
    function finite(i) { return isFinite(top[i]) && isValue(s.x[i]); }
    while (start < top.length) {
      if (!finite(start)) { start++; continue; }
      var end = start;
      while (end + 1 < top.length && finite(end + 1)) end++;
      var corners = [];
      if (start === end) {
        var x = xPx(c, s.x[start]);
        corners = [[x - 2, start], [x + 2, start]];
      } else {
        for (var i = start; i <= end; i++) corners.push([xPx(c, s.x[i]), i]);
      }
      corners.forEach(function (k, n) { d.push((n ? "L" : "M") + coord(k[0]) + " " + coord(yPx(c, top[k[1]]))); });
      corners.slice().reverse().forEach(function (k) {
        d.push("L" + coord(k[0]) + " " + coord(yPx(c, below ? below[k[1]] : 0)));
      });
      d.push("Z");
      start = end + 1;
    }
    return '<path class="series" d="' + d.join("") + '" fill="' + s.color + '" fill-opacity="0.85" stroke="none"/>';
  }
  // Gap bands (svg.rs bands): where a sampler had no value.
  function bandsMarkup(c) {
    var p = c.plot;
    return (c.spec.bands || []).map(function (b) {
      var from = xPx(c, b[0]), to = xPx(c, b[1]);
      return '<rect x="' + Math.min(from, to).toFixed(1) + '" y="' + p.y + '" width="' +
        Math.max(1, Math.abs(to - from)).toFixed(1) + '" height="' + p.h + '"/>';
    }).join("");
  }
  // Diagnosis markers (svg.rs markers): [at_s, label, title, kind, colour] each; labels
  // take the first row where they do not touch the one before, else the row freed first.
  function markerPlaces(c) {
    var p = c.plot, ends = [], places = [];
    for (var r = 0; r < MARKER_ROWS; r++) ends.push(-Infinity);
    (c.spec.markers || []).forEach(function (m) {
      if (!(m[0] >= c.xd.min && m[0] <= c.xd.max)) return;
      var x = xPx(c, m[0]), width = MARKER_GAP_PX + m[1].length * MARKER_CHAR_WIDTH;
      var end = x + width > p.x + p.w, from = end ? x - width : x, row = -1;
      for (var k = 0; k < MARKER_ROWS; k++) if (ends[k] + MARKER_GAP_PX <= from) { row = k; break; }
      if (row < 0) { row = 0; for (k = 1; k < MARKER_ROWS; k++) if (ends[k] < ends[row]) row = k; }
      ends[row] = end ? x : x + width;
      places.push({ m: m, x: x, row: row, end: end });
    });
    return places;
  }
  function markersMarkup(c) {
    var p = c.plot;
    return markerPlaces(c).map(function (k) {
      var m = k.m, x = k.x.toFixed(1), labelX = (k.end ? k.x - MARKER_GAP_PX : k.x + MARKER_GAP_PX).toFixed(1);
      return '<g class="marker ' + m[3] + '"><title>' + escapeText(m[2]) + "</title>" +
        '<line x1="' + x + '" y1="' + p.y + '" x2="' + x + '" y2="' + (p.y + p.h) + '" stroke="' + m[4] +
        '" stroke-width="1.5" stroke-dasharray="5 3"/>' +
        '<text x="' + labelX + '" y="' + (p.y + 11 + k.row * MARKER_ROW_PX).toFixed(1) + '" text-anchor="' +
        (k.end ? "end" : "start") + '" fill="' + m[4] + '" stroke="#ffffff" stroke-width="3" paint-order="stroke">' +
        escapeText(m[1]) + "</text></g>";
    }).join("");
  }
  // The markers whose line is within a few pixels of the mouse, in the diagnosis's words.
  function markerNotes(c, px) {
    return markerPlaces(c).filter(function (k) { return Math.abs(k.x - px) <= MARKER_HOVER_PX; })
      .map(function (k) {
        return '<div class="note">' + swatch(k.m[4]) + "<b>" + escapeText(k.m[1]) + "</b>: " + escapeText(k.m[2]) + "</div>";
      }).join("");
  }
  // A ring per linked point (a traced request), inside a link to its trace (svg.rs
  // link_rings).
  function linkRings(c, s) {
    return (s.k || []).map(function (href, i) {
      if (!isValue(s.y[i]) || !isValue(s.x[i])) return "";
      return '<a class="trace" href="' + escapeText(href) + '" target="_blank" rel="noopener noreferrer">' +
        '<circle cx="' + xPx(c, s.x[i]).toFixed(1) + '" cy="' + yPx(c, s.y[i]).toFixed(1) + '" r="' + LINK_RING +
        '" fill="' + s.color + '" fill-opacity="0" stroke="' + s.color + '" stroke-width="1.5"/></a>';
    }).join("");
  }
  function plotMarkup(c) {
    var tops = stackedTops(c), t = 0, out = [];
    c.spec.series.forEach(function (s) {
      if (s.style === "points") out.push(pointsPath(c, s) + linkRings(c, s));
      else if (s.style === "stacked") { out.push(areaPath(c, s, tops[t], t ? tops[t - 1] : null)); t++; }
      else if (s.style === "line_points") out.push(linePath(c, s) + stepDotsPath(c, s));
      else out.push(linePath(c, s));
    });
    return out.join("");
  }
  function redraw(c) {
    c.xd = c.spec.x === "time" && view ? view : c.baseXd;
    c.yd = yDomain(c);
    var ticks = axisTicks(c);
    c.grid.innerHTML = gridMarkup(c, ticks);
    c.ticks.innerHTML = ticksMarkup(c, ticks);
    if (c.bands) c.bands.innerHTML = bandsMarkup(c);
    c.marks.innerHTML = plotMarkup(c);
    if (c.markers) c.markers.innerHTML = markersMarkup(c);
    c.svg.setAttribute("data-drawn", drawnSeries(c));
  }
  function drawnSeries(c) {
    var n = 0;
    c.marks.querySelectorAll("path.series").forEach(function (p) { if ((p.getAttribute("d") || "").length > 0) n++; });
    return n;
  }

  // ---- hover ----
  function svgPoint(c, event) {
    var box = c.svg.getBoundingClientRect();
    return { x: (event.clientX - box.left) * c.width / box.width, y: (event.clientY - box.top) * c.height / box.height };
  }
  // A few pixels of slack: points on the frame (t = 0, the top of the axis) count.
  function inPlot(c, p) {
    var slack = 4;
    return p.x >= c.plot.x - slack && p.x <= c.plot.x + c.plot.w + slack &&
      p.y >= c.plot.y - slack && p.y <= c.plot.y + c.plot.h + slack;
  }
  function nearestIndex(xs, x) {
    var lo = 0, hi = xs.length - 1;
    if (hi < 0) return -1;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (xs[mid] < x) lo = mid + 1; else hi = mid; }
    if (lo > 0 && Math.abs(xs[lo - 1] - x) <= Math.abs(xs[lo] - x)) lo--;
    return lo;
  }
  function swatch(color) { return '<span class="swatch" style="background:' + color + '"></span>'; }
  function xHeading(c, x, last) {
    if (c.spec.x === "nines") return last ? "max" : "p" + ninesLabel(x).replace("%", "");
    if (c.spec.x === "rate") return "offered " + exactText("per_second", x);
    return "t = " + (x === 0 ? "0s" : durationNs(x * 1e9)) + ' <span class="muted">' + wallClock(x) + "</span>";
  }
  function nearestPoint(c, p) {
    var best = null, bestDistance = HOVER_PX * HOVER_PX;
    c.spec.series.forEach(function (s) {
      for (var i = 0; i < s.x.length; i++) {
        if (!isValue(s.y[i]) || !visible(c, s.x[i])) continue;
        var dx = xPx(c, s.x[i]) - p.x, dy = yPx(c, s.y[i]) - p.y, distance = dx * dx + dy * dy;
        if (distance <= bestDistance) { bestDistance = distance; best = { s: s, i: i }; }
      }
    });
    return best;
  }
  function pointTip(c, hit) {
    var s = hit.s, i = hit.i, label = s.l ? c.spec.labels[s.l[i]] : "";
    var cell = s.n && s.n[i] > 1
      ? '<br><span class="muted">the slowest of ' + s.n[i].toLocaleString("en-US") + " requests here</span>" : "";
    return swatch(s.color) + escapeText(s.name) + ": <b>" + exactText(c.spec.unit, s.y[i]) + "</b>" +
      (label ? " &middot; " + escapeText(label) : "") + "<br>" + xHeading(c, s.x[i], false) + cell +
      (s.k && s.k[i] ? '<br><span class="muted">click its ring to open the trace</span>' : "");
  }
  function rowTip(c, x) {
    var lines = [], heading = null, total = 0, stacked = false, crossAt = null;
    c.spec.series.forEach(function (s) {
      var i = nearestIndex(s.x, x);
      if (i < 0) return;
      if (heading === null) { heading = xHeading(c, s.x[i], c.spec.x === "nines" && i === s.x.length - 1); crossAt = s.x[i]; }
      var y = s.y[i];
      if (s.style === "stacked" && isValue(y)) { total += y; stacked = true; }
      lines.push(swatch(s.color) + escapeText(s.name) + ": <b>" + (isValue(y) ? exactText(c.spec.unit, y) : "-") + "</b>");
    });
    if (stacked) lines.push("total: <b>" + exactText(c.spec.unit, total) + "</b>");
    (c.spec.bands || []).forEach(function (b) {
      if (x >= b[0] && x <= b[1]) lines.push('<span class="muted">no sample: ' + escapeText(b[2]) + "</span>");
    });
    return { html: (heading || "") + "<br>" + lines.join("<br>"), x: crossAt };
  }
  function showTip(html, event) {
    tip.innerHTML = html;
    tip.hidden = false;
    var left = event.pageX + 14, top = event.pageY + 14;
    if (left + tip.offsetWidth > window.scrollX + document.documentElement.clientWidth - 8) left = event.pageX - tip.offsetWidth - 14;
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }
  function hideHover(c) {
    tip.hidden = true;
    c.cross.setAttribute("visibility", "hidden");
    c.dot.setAttribute("visibility", "hidden");
  }
  function hover(c, event) {
    var p = svgPoint(c, event);
    if (c.drag) { dragTo(c, p); return; }
    if (!inPlot(c, p)) { hideHover(c); return; }
    var notes = markerNotes(c, p.x);
    // Points, and rate charts (a dot per step, each series at rates of its own), name
    // the point under the mouse; other charts, every series at the mouse's x. A marker
    // near the mouse is named under either.
    if (c.spec.x === "rate" || c.spec.series.some(function (s) { return s.style === "points"; })) {
      var hit = nearestPoint(c, p);
      c.cross.setAttribute("visibility", "hidden");
      if (!hit) {
        c.dot.setAttribute("visibility", "hidden");
        if (notes) showTip(notes, event); else hideHover(c);
        return;
      }
      c.dot.setAttribute("cx", xPx(c, hit.s.x[hit.i]));
      c.dot.setAttribute("cy", yPx(c, hit.s.y[hit.i]));
      c.dot.setAttribute("stroke", hit.s.color);
      c.dot.setAttribute("visibility", "visible");
      showTip(pointTip(c, hit) + notes, event);
      return;
    }
    var row = rowTip(c, xValue(c, p.x));
    if (row.x === null) { hideHover(c); return; }
    var x = xPx(c, row.x).toFixed(1);
    c.cross.setAttribute("x1", x);
    c.cross.setAttribute("x2", x);
    c.cross.setAttribute("visibility", "visible");
    showTip(row.html + notes, event);
  }

  // ---- zoom ----
  function dragTo(c, p) {
    var x = Math.min(c.plot.x + c.plot.w, Math.max(c.plot.x, p.x)), x0 = c.drag.x;
    c.band.setAttribute("x", Math.min(x, x0));
    c.band.setAttribute("width", Math.abs(x - x0));
    c.band.setAttribute("visibility", "visible");
    c.drag.to = x;
  }
  function endDrag(c) {
    if (!c.drag) return;
    var from = c.drag.x, to = c.drag.to;
    c.drag = null;
    c.band.setAttribute("visibility", "hidden");
    if (to === undefined || Math.abs(to - from) < 4) return;
    zoomTo(xValue(c, Math.min(from, to)), xValue(c, Math.max(from, to)));
  }
  function zoomTo(min, max) {
    view = max > min ? { min: min, max: max } : null;
    charts.forEach(function (c) { if (c.spec.x === "time") redraw(c); });
    var button = document.getElementById("zoom-out");
    if (button) button.disabled = view === null;
  }

  // ---- set-up ----
  function overlay(c) {
    var g = document.createElementNS("http://www.w3.org/2000/svg", "g");
    g.setAttribute("class", "overlay");
    // Clicks go through to what is drawn (a traced request's link).
    g.setAttribute("pointer-events", "none");
    g.innerHTML = '<line class="cross" y1="' + c.plot.y + '" y2="' + (c.plot.y + c.plot.h) +
      '" stroke="#111827" stroke-opacity="0.5" visibility="hidden"/>' +
      '<circle class="dot" r="5" fill="none" stroke-width="2" visibility="hidden"/>' +
      '<rect class="band" y="' + c.plot.y + '" height="' + c.plot.h +
      '" fill="#2563eb" fill-opacity="0.12" stroke="#2563eb" visibility="hidden"/>';
    c.svg.appendChild(g);
    c.cross = g.querySelector(".cross");
    c.dot = g.querySelector(".dot");
    c.band = g.querySelector(".band");
  }
  function setUp(spec) {
    var svg = document.getElementById("chart-" + spec.id);
    if (!svg) throw new Error("chart " + spec.id + " is missing from the page");
    var box = svg.viewBox.baseVal;
    var c = {
      spec: spec, svg: svg, width: box.width, height: box.height, scale: spec.scale,
      plot: { x: spec.plot[0], y: spec.plot[1], w: spec.plot[2], h: spec.plot[3] },
      baseXd: { min: spec.xd[0], max: spec.xd[1] },
      grid: svg.querySelector("g.grid"), ticks: svg.querySelector("g.ticks"), marks: svg.querySelector("g.plot"),
      bands: svg.querySelector("g.bands"), markers: svg.querySelector("g.markers"),
      drag: null
    };
    c.xd = c.baseXd;
    c.yd = yDomain(c);
    overlay(c);
    svg.setAttribute("data-drawn", drawnSeries(c));
    svg.addEventListener("mousemove", function (e) { hover(c, e); });
    svg.addEventListener("mouseleave", function () { hideHover(c); });
    if (spec.x === "time") {
      svg.style.cursor = "crosshair";
      svg.addEventListener("mousedown", function (e) {
        var p = svgPoint(c, e);
        if (e.button === 0 && inPlot(c, p)) { c.drag = { x: p.x }; hideHover(c); e.preventDefault(); }
      });
      svg.addEventListener("dblclick", function () { zoomTo(0, 0); });
    }
    return c;
  }
  function setScale(id, scale) {
    charts.forEach(function (c) {
      if (c.spec.id !== id) return;
      c.scale = scale;
      redraw(c);
    });
    document.querySelectorAll('button[data-chart="' + id + '"]').forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-scale") === scale));
    });
  }

  // Binds the charts and buttons of the page as it stands; the live dashboard swaps in a
  // newer page and calls it again (through window.loadlabPlot), so it binds only what is
  // inside <main> and the chart data.
  function start() {
    page = JSON.parse(document.getElementById("plot-data").textContent);
    charts = page.charts.map(setUp);
    document.querySelectorAll("button[data-scale]").forEach(function (b) {
      b.addEventListener("click", function () { setScale(b.getAttribute("data-chart"), b.getAttribute("data-scale")); });
    });
    var zoomOut = document.getElementById("zoom-out");
    if (zoomOut) zoomOut.addEventListener("click", function () { zoomTo(0, 0); });
  }
  start();
  window.addEventListener("mouseup", function () { charts.forEach(endDrag); });
  window.loadlabPlot = {
    // What the reader chose: the zoomed time domain and each chart's scale.
    state: function () {
      return { view: view, scales: charts.map(function (c) { return [c.spec.id, c.scale]; }) };
    },
    // Binds a swapped-in page and applies what the reader chose on the previous one.
    restart: function (state) {
      tip.hidden = true;
      start();
      state.scales.forEach(function (s) {
        var c = charts.filter(function (c) { return c.spec.id === s[0]; })[0];
        if (c && c.scale !== s[1]) setScale(s[0], s[1]);
      });
      if (state.view) zoomTo(state.view.min, state.view.max);
      root.setAttribute("data-plot-charts", String(charts.length));
    }
  };

  // ---- self-test (#selftest): every chart redrawn under every view, hover tried ----
  function selfTest() {
    var problems = [];
    function check(c, what) {
      var markup = c.svg.innerHTML;
      if (markup.indexOf("NaN") >= 0 || markup.indexOf("Infinity") >= 0) problems.push(c.spec.id + " " + what + ": NaN in markup");
      if (drawnSeries(c) === 0 && hasVisibleData(c)) problems.push(c.spec.id + " " + what + ": nothing drawn");
      if (c.ticks.querySelectorAll("text").length < 2) problems.push(c.spec.id + " " + what + ": no ticks");
      var placed = markerPlaces(c).length, drawn = c.markers ? c.markers.querySelectorAll("line").length : 0;
      if (placed !== drawn) problems.push(c.spec.id + " " + what + ": " + drawn + " of " + placed + " markers drawn");
      var linked = c.spec.series.reduce(function (n, s) {
        return n + (s.k || []).filter(function (_, i) { return isValue(s.y[i]); }).length;
      }, 0), rings = c.marks.querySelectorAll("a.trace").length;
      if (linked !== rings) problems.push(c.spec.id + " " + what + ": " + rings + " of " + linked + " trace links drawn");
    }
    // The mouse on a marker's line, halfway down the plot, names it.
    function probeMarker(c) {
      var place = markerPlaces(c)[0];
      if (!place) return;
      var box = c.svg.getBoundingClientRect();
      var clientX = box.left + place.x * box.width / c.width;
      var clientY = box.top + (c.plot.y + c.plot.h / 2) * box.height / c.height;
      c.svg.dispatchEvent(new MouseEvent("mousemove", { clientX: clientX, clientY: clientY, bubbles: true }));
      if (tip.hidden || tip.textContent.indexOf(place.m[2]) < 0) problems.push(c.spec.id + ": hovering marker " + place.m[1] + " does not name it");
      hideHover(c);
    }
    // Lines are drawn whole (the frame clips them); dots only inside the view.
    function hasVisibleData(c) {
      return c.spec.series.some(function (s) {
        return s.y.some(function (y, i) { return isValue(y) && (s.style !== "points" || visible(c, s.x[i])); });
      });
    }
    function probe(c) {
      var s = c.spec.series.filter(function (s) { return s.y.some(isValue); })[0];
      if (!s) return;
      var i = s.y.findIndex(function (y, k) { return isValue(y) && visible(c, s.x[k]); });
      if (i < 0) return;
      var box = c.svg.getBoundingClientRect();
      var clientX = box.left + xPx(c, s.x[i]) * box.width / c.width;
      var clientY = box.top + yPx(c, s.y[i]) * box.height / c.height;
      c.svg.dispatchEvent(new MouseEvent("mousemove", { clientX: clientX, clientY: clientY, bubbles: true }));
      if (tip.hidden || tip.textContent.length === 0) problems.push(c.spec.id + ": hover shows nothing");
      hideHover(c);
    }
    charts.forEach(function (c) {
      check(c, "as drawn");
      [c.scale].concat(c.spec.toggle ? ["log", "linear", c.spec.scale] : []).forEach(function (scale) {
        setScale(c.spec.id, scale);
        check(c, scale);
      });
      probe(c);
      probeMarker(c);
    });
    var whole = charts.length ? charts[0].baseXd : { min: 0, max: 0 }, span = whole.max - whole.min;
    zoomTo(whole.min + span * 0.25, whole.min + span * 0.75);
    charts.forEach(function (c) { if (c.spec.x === "time") { check(c, "zoomed"); probe(c); probeMarker(c); } });
    zoomTo(0, 0);
    charts.forEach(function (c) { check(c, "zoomed out"); });
    return problems;
  }

  var problems = [];
  if (location.hash === "#selftest") {
    try { problems = selfTest(); } catch (err) { problems.push("self-test threw: " + err); }
    root.setAttribute("data-selftest", problems.length ? "failed: " + problems.join("; ") : "ok");
  }
  root.setAttribute("data-plot-charts", String(charts.length));
  root.setAttribute("data-plot-drawn", charts.map(function (c) { return c.svg.getAttribute("data-drawn"); }).join(","));
  // Diagnosis markers drawn, over all charts (each marker on each time chart).
  root.setAttribute("data-plot-markers", String(charts.reduce(function (n, c) {
    return n + (c.markers ? c.markers.querySelectorAll("line").length : 0);
  }, 0)));
  root.setAttribute("data-plot-ready-ms", String(Math.round(performance.now())));
  root.setAttribute("data-plot", "ready");
  // Errors after this point (in handlers) are counted too.
  function reportErrors() { root.setAttribute("data-plot-errors", String(window.plotErrors ? window.plotErrors.length : 0)); }
  reportErrors();
  window.addEventListener("error", reportErrors);
})();
