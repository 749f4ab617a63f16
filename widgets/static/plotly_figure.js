// A plotly FigureWidget's front end that loads plotly's widget module once per page, in the background
// (pulsarlab_widgets.plotly_module). Python prepends `const BUNDLE = {sha, request, reply, resync};`.
//
// anywidget gives a model 2 s to import its module and run `initialize`, then drops every later message to it; so
// this module is small, imports nothing at its top level and `initialize` returns at once. plotly's module (5 MB)
// comes from the server (the page's #jupyter-config-data names its content-hashed URL when the server has it),
// else from the kernel by a custom message. Until it is there, each model records the kernel's update messages and
// replays them into plotly's figure model, so a late figure draws the current frame; each view draws from that
// model's full state, with a sentence in the figure's place while it waits or when it cannot draw.
const PY2JS = [
  "_py2js_addTraces",
  "_py2js_deleteTraces",
  "_py2js_moveTraces",
  "_py2js_restyle",
  "_py2js_relayout",
  "_py2js_update",
  "_py2js_animate",
  "_py2js_removeLayoutProps",
  "_py2js_removeTraceProps",
];
const SERVED_TRIES = 4; // imports of the served file, 0.5 s, 1 s, 2 s apart
const DRAW_TRIES = 3; // views that throw while drawing, 0.25 s, 0.5 s apart
const AGAIN = "Re-run the cell, or reload the page.";

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// one loader per page and bundle: {promise, via: "server" | "kernel", events}
function loader() {
  const page = (globalThis.pulsarlabPlotly ??= {});
  return (page[BUNDLE.sha] ??= { promise: null, via: null, events: new EventTarget() });
}

function setVia(state, via) {
  state.via = via;
  state.events.dispatchEvent(new Event("change"));
}

function servedUrl() {
  const config = document.getElementById("jupyter-config-data");
  let served = null;
  try {
    served = config ? JSON.parse(config.textContent).pulsarlabPlotly : null;
  } catch {
    served = null;
  }
  return served && served.sha === BUNDLE.sha ? new URL(served.url, document.baseURI).href : null;
}

async function importServed(url) {
  let error = null;
  for (let attempt = 0; attempt < SERVED_TRIES; attempt++) {
    if (attempt) await delay(250 * 2 ** attempt);
    try {
      // a failed import may be remembered per URL: each retry asks under a URL of its own
      return await import(/* webpackIgnore: true */ attempt ? `${url}?attempt=${attempt}` : url);
    } catch (e) {
      error = e;
    }
  }
  throw error;
}

function fromKernel(model, signal) {
  return new Promise((resolve, reject) => {
    const onMessage = (msg, buffers) => {
      if (!msg || msg.type !== BUNDLE.reply || msg.sha !== BUNDLE.sha) return;
      model.off("msg:custom", onMessage);
      if (msg.error || !buffers || !buffers.length) {
        reject(new Error(msg.error || "the kernel sent no bundle"));
        return;
      }
      const url = URL.createObjectURL(new Blob([buffers[0]], { type: "text/javascript" }));
      import(/* webpackIgnore: true */ url)
        .then(resolve, reject)
        .finally(() => URL.revokeObjectURL(url));
    };
    const abandon = () => {
      model.off("msg:custom", onMessage);
      reject(Object.assign(new Error("the figure that asked the kernel was closed"), { abandoned: true }));
    };
    if (signal.aborted) return abandon();
    signal.addEventListener("abort", abandon, { once: true });
    model.on("msg:custom", onMessage);
    model.send({ type: BUNDLE.request, sha: BUNDLE.sha });
  });
}

async function fetchModule(state, model, signal) {
  const url = servedUrl();
  if (url) {
    setVia(state, "server");
    try {
      return await importServed(url);
    } catch (e) {
      console.warn(`pulsarlab: plotly.js did not load from ${url} (${e}); asking the kernel for it`);
    }
  }
  setVia(state, "kernel");
  return fromKernel(model, signal);
}

// plotly's module, loaded once per page; a failed load is forgotten, so a later figure tries again
async function plotlyModule(model, signal) {
  const state = loader();
  for (;;) {
    const promise = (state.promise ??= fetchModule(state, model, signal));
    try {
      return await promise;
    } catch (e) {
      if (state.promise === promise) state.promise = null;
      if (!e.abandoned || signal.aborted) throw e;
    }
  }
}

// Once per module: plotly's views send Python no computed defaults after each update (Python keeps what it set),
// and plotly's figure model is reachable from the factory that creates it.
function prepare(mod) {
  const state = loader();
  if (state.prepared) return state.prepared;
  const view = mod.FigureView.prototype;
  view._sendTraceDeltas = view._sendLayoutDelta = function () {};
  const init = mod.FigureModel.prototype.initialize;
  const prepared = { created: null };
  mod.FigureModel.prototype.initialize = function () {
    prepared.created = this;
    return init.call(this);
  };
  state.prepared = prepared;
  return prepared;
}

// plotly's figure model for `model`, with every update that arrived while plotly loaded applied in order
function figureModel(mod, model, queued) {
  const prepared = prepare(mod);
  const listeners = new Map();
  let replaying = null;
  const shim = {
    ...model,
    get: (name) => (replaying && replaying[0] === name ? replaying[1] : model.get(name)),
    on(name, callback) {
      if (!listeners.has(name)) listeners.set(name, []);
      listeners.get(name).push(callback);
      model.on(name, callback);
    },
  };
  prepared.created = null;
  mod.default().initialize({ model: shim });
  const figure = prepared.created;
  if (!figure) throw new Error("plotly's widget module did not create its figure model");
  for (const item of queued) {
    replaying = item;
    for (const callback of listeners.get(`change:${item[0]}`) || []) callback();
  }
  replaying = null;
  return figure;
}

// anywidget (0.11) rejects a model's `ready` 2 s after the model is created unless its module has loaded and run
// `initialize` by then, and drops every later message to the model. On a slow or busy machine that is too short for
// any anywidget of the page, so once per page its model class is changed: a new model waits for its module however
// long it takes (its messages queue in order meanwhile), and a model that timed out before the change applies its
// messages instead of dropping them (a figure then asks the kernel for its full state: see `initialize`).
const TIMED_OUT = "[anywidget] Failed to initialize model.";

function steadyModelClass(model) {
  const proto = model && Object.getPrototypeOf(model);
  if (!proto || model.constructor.model_name !== "AnyModel" || proto.pulsarlabSteady) return;
  const initialize = proto.initialize;
  const handle = proto._handle_comm_msg;
  const base = Object.getPrototypeOf(proto)._handle_comm_msg;
  proto.initialize = function (...args) {
    const timeout = AbortSignal.timeout;
    AbortSignal.timeout = () => new AbortController().signal;
    try {
      return initialize.apply(this, args);
    } finally {
      AbortSignal.timeout = timeout;
    }
  };
  proto._handle_comm_msg = function (...msg) {
    return handle.apply(this, msg).catch((e) => {
      if (!e || e.message !== TIMED_OUT) throw e;
      return base.apply(this, msg);
    });
  };
  proto.pulsarlabSteady = true;
}

function steadyAnywidget(manager) {
  const page = (globalThis.pulsarlabPlotly ??= {});
  if (page.steady || !manager || !manager._models) return;
  page.steady = true;
  for (const promise of Object.values(manager._models)) Promise.resolve(promise).then(steadyModelClass, () => {});
}

function kernelBusy(model) {
  const kernel = model.widget_manager && model.widget_manager.kernel;
  return Boolean(kernel && kernel.status === "busy");
}

function waitingText(model) {
  const state = loader();
  if (state.via !== "kernel") return "Loading plotly.js, the figure library…";
  return kernelBusy(model)
    ? "Waiting for the kernel to send plotly.js, the figure library: it is busy running cells, and the figure appears when they finish."
    : "Loading plotly.js, the figure library, from the kernel…";
}

function failureText(error) {
  return `This figure could not load plotly.js, the figure library (${error && error.message ? error.message : error}). ${AGAIN}`;
}

export default () => {
  let ready = null; // resolves to plotly's module and figure model
  let failure = null;

  function initialize({ model, signal }) {
    steadyAnywidget(model.widget_manager);
    const queued = [];
    const record = PY2JS.map((name) => {
      const callback = (_model, value) => queued.push([name, value]);
      model.on(`change:${name}`, callback);
      return [name, callback];
    });
    // a full state includes every update before it
    const forget = () => (queued.length = 0);
    model.on("change:_widget_data", forget);
    record.push(["_widget_data", forget]);
    // the kernel sends the figure's full state if this model has missed updates (it was created from a stale state,
    // after a page reload, or anywidget dropped messages to it); nothing when it is current
    model.send({ type: BUNDLE.resync });
    ready = plotlyModule(model, signal).then((mod) => {
      const figure = figureModel(mod, model, queued);
      for (const [name, callback] of record) model.off(`change:${name}`, callback);
      queued.length = 0;
      return { mod, figure };
    });
    ready.catch((e) => {
      failure = e;
      console.warn("pulsarlab: a figure could not load plotly.js:", e);
    });
  }

  async function render({ model, el, signal }) {
    el.classList.add("pulsarlab-figure-widget");
    const note = document.createElement("div");
    note.className = "pulsarlab-figure-note";
    const height = (model.get("_widget_layout") || {}).height || 360;
    note.style.cssText =
      `min-height:${height}px;box-sizing:border-box;display:flex;align-items:center;justify-content:center;` +
      "padding:1em 2em;text-align:center;color:#555;background:#fafafa;border:1px dashed #bbb;font:15px/1.5 sans-serif";
    const plot = document.createElement("div");
    el.replaceChildren(note, plot);
    const say = (text, kind) => {
      note.textContent = text;
      note.dataset.kind = kind;
      note.hidden = false;
      note.style.display = "flex"; // the inline display would win over [hidden] where no stylesheet forces it (Voilà)
    };
    // while plotly loads, the sentence follows where it comes from and whether the kernel is busy
    const state = loader();
    const kernel = model.widget_manager && model.widget_manager.kernel;
    const onChange = () => {
      if (note.dataset.kind === "waiting") say(waitingText(model), "waiting");
    };
    if (!failure) say(waitingText(model), "waiting");
    state.events.addEventListener("change", onChange);
    if (kernel && kernel.statusChanged) kernel.statusChanged.connect(onChange);
    let loaded;
    try {
      loaded = await ready;
    } catch (e) {
      say(failureText(e), "error");
      return undefined;
    } finally {
      state.events.removeEventListener("change", onChange);
      if (kernel && kernel.statusChanged) kernel.statusChanged.disconnect(onChange);
    }
    if (signal.aborted) return undefined;

    // one plotly view at a time; listeners go on this view's model proxy (anywidget drops them with the view)
    let view = null;
    let viewListeners = [];
    const draw = () => {
      for (const [name, callback] of viewListeners) model.off(name, callback);
      viewListeners = [];
      if (view) view.remove();
      plot.replaceChildren();
      const viewModel = Object.create(loaded.figure, {
        on: {
          value: (name, callback) => {
            viewListeners.push([name, callback]);
            model.on(name, callback);
          },
        },
      });
      view = new loaded.mod.FigureView(viewModel, plot);
      view.perform_render();
    };
    for (let attempt = 1; ; attempt++) {
      try {
        draw();
        break;
      } catch (e) {
        if (attempt >= DRAW_TRIES) {
          console.warn("pulsarlab: a figure could not be drawn:", e);
          say(`This figure could not be drawn (${e && e.message ? e.message : e}). ${AGAIN}`, "error");
          return undefined;
        }
        await delay(250 * attempt);
        if (signal.aborted) return undefined;
      }
    }
    // drawn: the sentence hidden, and the frame of its player's timeline the figure shows as data-frame (the player
    // sets shown_frame after that frame's updates, on the same comm, so plotly.js has applied them by now)
    const shown = () => {
      note.hidden = true;
      note.style.display = "none";
      note.dataset.kind = "drawn";
      const frame = model.get("shown_frame");
      if (frame === null || frame === undefined) delete el.dataset.frame;
      else el.dataset.frame = String(frame);
    };
    shown();
    // the kernel sends a figure's whole state again when it is displayed again: draw that state (once per frame)
    let pending = false;
    const redraw = () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        if (signal.aborted) return;
        try {
          draw();
          shown();
        } catch (e) {
          say(`This figure could not be redrawn (${e && e.message ? e.message : e}). ${AGAIN}`, "error");
        }
      });
    };
    model.on("change:_widget_data", redraw);
    model.on("change:_widget_layout", redraw);
    // a redraw still to come marks the figure when it has drawn
    model.on("change:shown_frame", () => pending || note.dataset.kind !== "drawn" || shown());
    return () => {
      if (view) view.remove();
    };
  }

  return { initialize, render };
};
