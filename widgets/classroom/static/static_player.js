/* pulsarlab's static players and figures: draws the blocks of pulsarlab_widgets.classroom.animation with plotly.js, no kernel.
   A player's first figure carries a plotly slider over the frames and play / pause buttons; the other views follow.
   A frame is applied with Plotly.react (a full redraw of that frame). Keys, once the player has the focus (click it):
   -> / <- step, space play / pause, Home / End. */
(function () {
  "use strict";
  if (window.pulsarlabStatic) return;
  var CONFIG = { responsive: true, displaylogo: false };
  // the band under the figure's own bottom margin that holds the buttons and the slider (its ticks and labels)
  var CONTROLS_PX = 64;
  var LEGEND_GAP_PX = 8;

  function spec(root) {
    return JSON.parse(root.querySelector("script.pl-spec").textContent);
  }

  function copy(obj) {
    return JSON.parse(JSON.stringify(obj));
  }

  function controls(n, active, indices) {
    var steps = [];
    var every = Math.max(1, Math.ceil(n / 20));
    for (var i = 0; i < n; i++) {
      var labelled = i % every === 0 ? i < n - every / 2 || i === n - 1 : i === n - 1;
      var shown = indices ? indices[i] : i;
      steps.push({ label: labelled ? String(shown) : "", method: "skip", args: [i], value: String(i) });
    }
    return {
      sliders: [{
        active: active, steps: steps, x: 0.16, len: 0.84, y: 0, yanchor: "top", pad: { t: 55, b: 0 },
        currentvalue: { visible: false }, ticklen: 4, font: { size: 11 }, transition: { duration: 0 },
      }],
      updatemenus: [{
        type: "buttons", direction: "left", showactive: false, x: 0, xanchor: "left", y: 0, yanchor: "top",
        pad: { t: 60, r: 10 },
        buttons: [
          { label: "▶ play", method: "skip", args: ["play"] },
          { label: "❚❚ pause", method: "skip", args: ["pause"] },
        ],
      }],
    };
  }

  // frames after the first are deltas from the frame before (pulsarlab_widgets.classroom.animation.delta)
  function undelta(prev, d) {
    if (d !== null && typeof d === "object" && !Array.isArray(d)) {
      var keys = Object.keys(d);
      if (keys.length === 1) {
        var v = d[keys[0]];
        if (keys[0] === "$same") return prev;
        if (keys[0] === "$ext") return prev.concat(v);
        if (keys[0] === "$list") return v.map(function (x, i) { return undelta(prev[i], x); });
        if (keys[0] === "$dict") {
          var out = {};
          Object.keys(v).forEach(function (k) { out[k] = k in prev ? undelta(prev[k], v[k]) : v[k]; });
          return out;
        }
      }
    }
    return d;
  }

  // frame i of a view, decoded forward from the nearest kept one (every 16th frame is kept)
  function frames(view) {
    var kept = { 0: view.frames[0] };
    return function (i) {
      var from = i - (i % 16);
      while (!(from in kept)) from -= 16;
      var f = kept[from];
      for (var j = from + 1; j <= i; j++) {
        f = undelta(f, view.frames[j]);
        if (j % 16 === 0) kept[j] = f;
      }
      return f;
    };
  }

  function setupPlayer(root) {
    var s = spec(root);
    var n = s.labels.length;
    var label = root.querySelector(".pl-label");
    var views = Array.prototype.slice.call(root.querySelectorAll(".pl-view"));
    var state = { i: s.start, timer: null };
    var frameOf = s.views.map(frames);

    // the height of the first figure's legend as plotly drew it (0 before the first draw): the controls go
    // under it, however many rows it wraps to at the page's width
    var legendPx = 0;

    function layoutFor(v, i, frame) {
      var layout = copy(frame.layout);
      layout.template = s.views[v].template;
      if (v === 0) {
        var c = controls(n, i, s.indices);
        var height = layout.height || 450;
        var margin = Object.assign({ t: 100, b: 80 }, layout.margin || {});
        var plot = Math.max(height - margin.t - margin.b, 1);
        var legend = layout.legend || {};
        // a legend hanging under the plot (y < 0): its top is -y * plot px under the plot area
        var under = legend.y !== undefined && legend.y < 0 && layout.showlegend !== false;
        var below = Math.max(margin.b, under ? -legend.y * plot + legendPx + LEGEND_GAP_PX : 0);
        c.sliders[0].pad.t = below;
        c.updatemenus[0].pad.t = below + 6;
        layout.sliders = c.sliders;
        layout.updatemenus = (layout.updatemenus || []).concat(c.updatemenus);
        layout.height = height - margin.b + below + CONTROLS_PX;
        layout.margin = Object.assign({}, margin, { b: below + CONTROLS_PX });
      }
      return layout;
    }

    function drawnLegendPx(div) {
      var box = div.querySelector("g.legend");
      return box ? Math.ceil(box.getBoundingClientRect().height) : 0;
    }

    function show(i) {
      i = Math.max(0, Math.min(n - 1, i));
      state.i = i;
      root.setAttribute("data-frame", String(i));
      label.innerHTML = s.labels[i];
      var draws = views.map(function (div, v) {
        var frame = frameOf[v](i);
        var drawn = Plotly.react(div, copy(frame.data), layoutFor(v, i, frame), CONFIG);
        if (v !== 0) return drawn;
        return Promise.resolve(drawn).then(function () {
          var px = drawnLegendPx(div);
          if (px === legendPx || state.i !== i) return undefined;
          legendPx = px;  // the legend wraps to another number of rows: move the controls under it
          return Plotly.react(div, copy(frame.data), layoutFor(0, i, frame), CONFIG);
        });
      });
      // data-drawn: the frame every view has finished drawing, controls placed (what a page or a test waits on)
      Promise.all(draws).then(function () {
        if (state.i === i) root.setAttribute("data-drawn", String(i));
      });
    }

    function pause() {
      if (state.timer !== null) clearInterval(state.timer);
      state.timer = null;
      root.classList.remove("pl-playing");
    }

    function play() {
      pause();
      if (state.i >= n - 1) show(0);
      root.classList.add("pl-playing");
      state.timer = setInterval(function () {
        if (state.i >= n - 1) pause();
        else show(state.i + 1);
      }, s.interval || 800);
    }

    show(state.i);
    var first = views[0];
    first.on("plotly_sliderchange", function (e) {
      var i = Number(e.step.args[0]);
      pause();
      setTimeout(function () { show(i); }, 0);
    });
    first.on("plotly_buttonclicked", function (e) {
      var what = e.button.args[0];
      setTimeout(function () { if (what === "play") play(); else pause(); }, 0);
    });
    root.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      var acts = {
        ArrowRight: function () { pause(); show(state.i + 1); },
        ArrowLeft: function () { pause(); show(state.i - 1); },
        " ": function () { if (state.timer === null) play(); else pause(); },
        Home: function () { pause(); show(0); },
        End: function () { pause(); show(n - 1); },
      };
      if (!acts[e.key]) return;
      e.preventDefault();
      acts[e.key]();
    });
    root.addEventListener("mousedown", function () { root.focus({ preventScroll: true }); });
    root.pulsarlab = { show: show, play: play, pause: pause, frames: n, get index() { return state.i; } };
  }

  function setupFigure(root) {
    var s = spec(root);
    var div = document.createElement("div");
    root.appendChild(div);
    Plotly.newPlot(div, s.data, s.layout, CONFIG);
  }

  function init(scope) {
    scope = scope || document;
    scope.querySelectorAll(".pulsarlab-static-player:not(.pl-ready)").forEach(function (root) {
      root.classList.add("pl-ready");
      setupPlayer(root);
    });
    scope.querySelectorAll(".pulsarlab-static-figure:not(.pl-ready)").forEach(function (root) {
      root.classList.add("pl-ready");
      setupFigure(root);
    });
  }

  window.pulsarlabStatic = { init: init };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { init(); });
  else init();
})();
