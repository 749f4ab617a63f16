// Figures that fill their cell: when a responsive plotly figure inside the enclosing .pulsarlab-fit container is
// drawn narrower or wider than its box (drawn before it was attached, or the cell changed width), fire one window
// "resize" so plotly.js resizes every responsive figure to its container.
function render({ el }) {
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
  const check = () => {
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
    check();
  };
  attach();
  return () => {
    resized.disconnect();
    changed.disconnect();
    if (timer !== null) clearTimeout(timer);
    if (later !== null) clearTimeout(later);
  };
}

export default { render };
