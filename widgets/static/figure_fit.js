// Figures that fill their cell: when a responsive plotly figure inside the enclosing .pulsarlab-fit container is
// drawn narrower or wider than its box (drawn before it was attached, or the cell changed width), fire one window
// "resize" so plotly.js resizes every responsive figure to its container.
// In presenter mode (body.pulsarlab-present) the container also fits the window: from the heights its views drew
// (model "natural") and the height of everything else in it (controls, explanation), ask Python for the heights the
// figures are drawn at (model "heights"), side by side (class pl-side) on a landscape screen where that shrinks them
// less than stacking them does.
const KEEP_FREE_PX = 24; // the window's height not given to the container: the cell's padding
const PLOTLY_DEFAULT_HEIGHT = 450;

function presenting() {
  return document.body.classList.contains("pulsarlab-present");
}

function figureChildren(container) {
  return Array.from(container.children).filter(
    (c) => c.classList.contains("js-plotly-plot") || c.querySelector(".js-plotly-plot"),
  );
}

// heights for `natural` figures in rows of `perRow` within `room` px; `worst` is the smallest shrink factor
function layoutFor(natural, perRow, room) {
  const rows = [];
  for (let i = 0; i < natural.length; i += perRow) rows.push(natural.slice(i, i + perRow));
  const total = rows.reduce((sum, row) => sum + Math.max(...row), 0);
  const scale = Math.min(1, Math.max(room, 0) / total);
  const heights = rows.flatMap((row) => row.map((h) => Math.min(h, Math.floor(Math.max(...row) * scale))));
  return { heights, worst: Math.min(...heights.map((h, i) => h / natural[i])) };
}

function render({ model, el }) {
  let container = null;
  let timer = null;
  const kicked = new WeakMap(); // plot -> the box width a resize was last asked for (one ask per width: no loop)
  const kick = () => {
    if (timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      window.dispatchEvent(new Event("resize"));
    }, 50);
  };
  const fitWindow = () => {
    const figures = figureChildren(container);
    const box = container.getBoundingClientRect();
    if (!presenting() || figures.length === 0 || box.height <= 0) return;
    const natural = figures.map((_f, i) => model.get("natural")[i] ?? PLOTLY_DEFAULT_HEIGHT);
    const rects = figures.map((f) => f.getBoundingClientRect());
    const block = Math.max(...rects.map((r) => r.bottom)) - Math.min(...rects.map((r) => r.top));
    const room = window.innerHeight - KEEP_FREE_PX - (box.height - block);
    const stacked = layoutFor(natural, 1, room);
    const landscape = window.innerWidth >= 1.2 * window.innerHeight;
    const side = figures.length > 1 && landscape ? layoutFor(natural, 2, room) : null;
    const useSide = side !== null && stacked.worst < 0.85 && side.worst >= 1.15 * stacked.worst;
    const chosen = useSide ? side : stacked;
    figures.forEach((f) => f.classList.add("pl-fit-figure"));
    if (container.classList.contains("pl-side") !== useSide) {
      container.classList.toggle("pl-side", useSide);
      soon();
    }
    const heights = chosen.worst >= 1 ? [] : chosen.heights;
    const asked = model.get("heights") || [];
    if (heights.length !== asked.length || heights.some((h, i) => Math.abs(h - asked[i]) > 1)) {
      model.set("heights", heights);
      model.save_changes();
    }
  };
  const check = () => {
    fitWindow();
    for (const plot of container.querySelectorAll(".js-plotly-plot")) {
      const full = plot._fullLayout;
      const box = plot.clientWidth;
      if (!full || box <= 0 || !plot._context || !plot._context.responsive || (plot.layout && plot.layout.width)) {
        continue;
      }
      if (Math.abs(full.width - box) > 2 && kicked.get(plot) !== box) {
        kicked.set(plot, box);
        kick();
      }
    }
  };
  // checked a moment after the changes stop, not inside a redraw: reading a box's width forces a layout
  let later = null;
  const soon = () => {
    if (later !== null) clearTimeout(later);
    later = setTimeout(() => {
      later = null;
      check();
    }, 200);
  };
  const resized = new ResizeObserver(soon);
  const changed = new MutationObserver(soon);
  let tries = 0;
  const attach = () => {
    container = el.closest(".pulsarlab-fit");
    if (!container) {
      if (tries++ < 600) requestAnimationFrame(attach);
      return;
    }
    resized.observe(container);
    changed.observe(container, { childList: true, subtree: true });
    model.on("change:natural", soon);
    window.addEventListener("resize", soon);
    check();
  };
  attach();
  return () => {
    resized.disconnect();
    changed.disconnect();
    model.off("change:natural", soon);
    window.removeEventListener("resize", soon);
    if (timer !== null) clearTimeout(timer);
    if (later !== null) clearTimeout(later);
  };
}

export default { render };
