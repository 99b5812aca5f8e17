// loadlab attack -dashboard: keeps the run page current while the run goes. Once a
// second it asks /data for the newest snapshot's version; when that changed it fetches
// the page again, swaps in its <main> and chart data, and lets the page script bind them
// again, keeping the reader's zoom and log/linear choices. A line at the top right says
// "live · updated Xs ago", and "finished" once the final page is in.
(function () {
  "use strict";
  var POLL_MS = 1000;
  // A finished page keeps asking, more slowly: a plan's dashboard moves on to its next
  // step's page at the same address.
  var FINISHED_POLL_MS = 5000;
  var root = document.documentElement;
  var state = JSON.parse(document.getElementById("live-state").textContent);
  var publishedAt = Date.now(), lost = false;
  var badge = document.createElement("div");
  badge.id = "live-badge";
  badge.setAttribute("style", "position:fixed;top:6px;right:10px;padding:2px 8px;border-radius:4px;" +
    "background:#111827;color:#fff;font:12px sans-serif;opacity:0.85;z-index:10");
  document.body.appendChild(badge);

  function show() {
    var text;
    if (state.finished) {
      text = "finished";
    } else {
      text = "live · updated " + Math.max(0, Math.round((Date.now() - publishedAt) / 1000)) + "s ago";
      if (lost) text += " · dashboard not answering";
    }
    badge.textContent = text;
    root.setAttribute("data-live", state.finished ? "finished" : "live");
    root.setAttribute("data-live-version", String(state.version));
  }

  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    var main = fresh.querySelector("main"), data = fresh.getElementById("plot-data");
    var freshState = fresh.getElementById("live-state");
    if (!main || !data || !freshState) return;
    var chosen = window.loadlabPlot ? window.loadlabPlot.state() : null;
    document.querySelector("main").replaceWith(document.adoptNode(main));
    document.getElementById("plot-data").textContent = data.textContent;
    state = JSON.parse(freshState.textContent);
    if (window.loadlabPlot && chosen) window.loadlabPlot.restart(chosen);
  }

  function poll() {
    fetch("/data", { cache: "no-store" })
      .then(function (answer) { return answer.json(); })
      .then(function (data) {
        lost = false;
        publishedAt = Date.now() - data.age_ms;
        if (data.version === state.version) return null;
        return fetch("/", { cache: "no-store" })
          .then(function (answer) { return answer.text(); })
          // Outside the promise, so a mistake in swapping shows as a page error.
          .then(function (html) { setTimeout(function () { swap(html); show(); }, 0); });
      })
      .catch(function () { lost = true; })
      .then(function () {
        show();
        setTimeout(poll, state.finished ? FINISHED_POLL_MS : POLL_MS);
      });
  }

  show();
  setInterval(show, POLL_MS);
  poll();
})();
